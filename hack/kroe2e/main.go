// Command kroe2e runs kro's own chainsaw end-to-end cases (from kro's
// module in the Go module cache, as written but for the adaptations
// adapt makes) against a conformance fleet: a hub running fleetgraph and
// two spokes, each with a kube-controller-manager. It prints one line per
// case and a summary, and exits non-zero if any case failed.
//
// make e2e-kro builds what it needs and runs it; see docs/guides/testing.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

type options struct {
	kro      string // kro's module directory
	chainsaw string // the chainsaw binary
	run      string // a regexp: only the cases whose directory matches
	out      string // where logs and adapted cases go
}

func main() {
	var o options
	flag.StringVar(&o.kro, "kro", "", "kro's module directory (go mod download -json github.com/kubernetes-sigs/kro@v0.9.4 gives its Dir)")
	flag.StringVar(&o.chainsaw, "chainsaw", "chainsaw", "the chainsaw binary")
	flag.StringVar(&o.run, "run", "", "run only the cases whose directory name matches this regexp")
	flag.StringVar(&o.out, "out", "", "directory for the adapted cases and logs (default: a new temporary directory)")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "kroe2e:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.kro == "" {
		return errors.New("-kro is required")
	}
	filter, err := regexp.Compile(o.run)
	if err != nil {
		return err
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "kroe2e-"); err != nil {
			return err
		}
	}
	cases, err := listCases(filepath.Join(o.kro, "test", "e2e", "chainsaw"), filter)
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Printf("kroe2e: starting a hub and 2 spokes, each spoke with a kube-controller-manager; logs in %s\n", o.out)
	fleet, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2, Cluster: fgtesting.ClusterOptions{ControllerManager: true}})
	if err != nil {
		return err
	}
	defer func() { _ = fleet.Stop() }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := startHub(ctx, fleet, filepath.Join(o.out, "fleetgraph.log")); err != nil {
		return err
	}
	files, err := fgtesting.WriteKubeconfigs(o.out, fleet.Clusters()...)
	if err != nil {
		return err
	}
	fmt.Printf("kroe2e: fleet and hub up in %s\n", time.Since(start).Round(100*time.Millisecond))

	failed := 0
	for _, name := range cases {
		ok, took, err := runCase(ctx, o, files, name)
		if err != nil {
			return err
		}
		verdict := "PASS"
		if !ok {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Printf("%s %-40s %6.1fs  (log: %s)\n", verdict, name, took.Seconds(), filepath.Join(o.out, name+".log"))
	}
	fmt.Printf("kroe2e: %d of %d kro v0.9.4 e2e cases passed in %s\n", len(cases)-failed, len(cases), time.Since(start).Round(100*time.Millisecond))
	if failed > 0 {
		return fmt.Errorf("%d cases failed", failed)
	}
	return nil
}

func listCases(dir string, filter *regexp.Regexp) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var cases []string
	for _, e := range entries {
		if e.IsDir() && filter.MatchString(e.Name()) {
			cases = append(cases, e.Name())
		}
	}
	sort.Strings(cases)
	if len(cases) == 0 {
		return nil, fmt.Errorf("no cases in %s match %q", dir, filter)
	}
	return cases, nil
}

// startHub runs fleetgraph as a platform would: one multicluster manager
// on the hub, every spoke engaged, the RGD controller on (it installs the
// RGD CRD on the hub). Its log goes to logPath.
func startHub(ctx context.Context, fleet *fgtesting.Fleet, logPath string) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logFile)))
	provider, err := fleet.NewProvider(ctx)
	if err != nil {
		return err
	}
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 ctrl.Log.WithName("hub"),
	})
	if err != nil {
		return err
	}
	hub, err := sdk.NewHub(nil, sdk.Options{RGDs: sdk.RGDOptions{InstallCRD: true}})
	if err != nil {
		return err
	}
	if err := hub.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			ctrl.Log.Error(err, "manager stopped")
		}
	}()
	return waitRGDsServed(ctx, fleet, len(fleet.Spokes()), hub)
}

// waitRGDsServed waits until the hub serves RGDs and has engaged every
// spoke, so that the first case does not race the hub's start.
func waitRGDsServed(ctx context.Context, fleet *fgtesting.Fleet, spokes int, hub *sdk.Hub) error {
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, &v1alpha1.ResourceGraphDefinitionList{}); err != nil {
			return false, nil
		}
		return len(hub.Clusters()) == spokes, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the hub to serve RGDs and engage %d spokes: %w", spokes, err)
	}
	return nil
}

// runCase adapts one case into o.out/cases/<name> (kro's other files
// linked beside it) and runs chainsaw on it: spoke-1 is the default
// cluster, the hub and spoke-2 are named clusters, and kro's own
// .chainsaw.yaml is the configuration.
func runCase(ctx context.Context, o options, files fgtesting.KubeconfigFiles, name string) (bool, time.Duration, error) {
	src := filepath.Join(o.kro, "test", "e2e", "chainsaw", name)
	dst := filepath.Join(o.out, "cases", name)
	changes, err := writeAdapted(src, dst, []string{"spoke-2"})
	if err != nil {
		return false, 0, fmt.Errorf("adapting %s: %w", name, err)
	}
	logFile, err := os.Create(filepath.Join(o.out, name+".log"))
	if err != nil {
		return false, 0, err
	}
	defer logFile.Close()
	if len(changes) == 0 {
		changes = []string{"(none)"}
	}
	fmt.Fprintf(logFile, "adaptations:\n  %s\n\n", strings.Join(changes, "\n  "))
	cmd := exec.CommandContext(ctx, o.chainsaw, "test", dst,
		"--config", filepath.Join(o.kro, ".chainsaw.yaml"),
		"--cluster", hubCluster+"="+files.Clusters[hubCluster],
		"--cluster", "spoke-2="+files.Clusters["spoke-2"],
		"--no-color")
	// chainsaw's default cluster is KUBECONFIG's (it has no flag for it).
	cmd.Env = append(os.Environ(), "KUBECONFIG="+files.Clusters["spoke-1"])
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return false, took, nil
	}
	return err == nil, took, err
}

// writeAdapted writes the adapted chainsaw-test.yaml into dst and links
// every other file of the case there.
func writeAdapted(src, dst string, otherSpokes []string) ([]string, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	var changes []string
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		_ = os.Remove(to)
		if e.Name() != "chainsaw-test.yaml" {
			notes, err := placeFile(from, to)
			if err != nil {
				return nil, err
			}
			changes = append(changes, notes...)
			continue
		}
		test, err := os.ReadFile(from)
		if err != nil {
			return nil, err
		}
		adapted, notes, err := adapt(test, src, otherSpokes)
		if err != nil {
			return nil, err
		}
		changes = append(changes, notes...)
		if err := os.WriteFile(to, adapted, 0o644); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// placeFile links kro's file from at to, or, when it names kro's
// bookkeeping, writes a copy that names fleetgraph's (adaptBookkeeping).
func placeFile(from, to string) ([]string, error) {
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	adapted, notes := adaptBookkeeping(filepath.Base(from), data)
	if len(notes) == 0 {
		return nil, os.Symlink(from, to)
	}
	return notes, os.WriteFile(to, adapted, 0o644)
}
