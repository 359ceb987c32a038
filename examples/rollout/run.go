package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const timeout = 3 * time.Minute

// rings puts spoke-1 in the canary ring, the others in the main ring.
var rings = map[string]string{"spoke-1": "canary", "spoke-2": "main", "spoke-3": "main"}

const rolloutYAML = `
apiVersion: fleetgraph.dev/v1alpha1
kind: GraphRollout
metadata:
  name: greeting
spec:
  graph: greeting
  waves:
  - name: canary
    clusterSelector:
      matchLabels: {ring: canary}
  - name: main
    clusterSelector:
      matchLabels: {ring: main}
  health:
    readyPercent: 100
    soakSeconds: 3
`

const rgdYAML = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: greeting
spec:
  schema:
    apiVersion: v1alpha1
    kind: Greeting
    spec:
      name: string | default="world"
  resources:
  - id: message
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}
      data:
        text: %q
`

func run(ctx context.Context, out io.Writer) error {
	start := time.Now()
	say(out, "Starting a hub and 3 spokes (real kube-apiserver %s + etcd on loopback)...", fgtesting.KubeVersion)
	fleet, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 3})
	if err != nil {
		return err
	}
	defer func() { _ = fleet.Stop() }()
	hubClient, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	if err != nil {
		return err
	}
	if err := registerSpokes(ctx, out, hubClient, fleet); err != nil {
		return err
	}
	hub, err := startHub(ctx, fleet)
	if err != nil {
		return err
	}
	if err := applyYAML(ctx, fleet, rolloutYAML); err != nil {
		return err
	}
	say(out, "Applied GraphRollout \"greeting\": wave canary (ring=canary), then wave main (ring=main); 100%% Ready for 3s.")
	if err := applyRGD(ctx, hubClient, "hello"); err != nil {
		return err
	}
	if err := createGreetings(ctx, fleet); err != nil {
		return err
	}
	if err := watchRollout(ctx, out, hub, 1); err != nil {
		return err
	}
	say(out, "Changing the graph: the greeting's text becomes \"hello, world\" (revision 2).")
	if err := applyRGD(ctx, hubClient, "hello, world"); err != nil {
		return err
	}
	if err := watchRollout(ctx, out, hub, 2); err != nil {
		return err
	}
	say(out, "Done in %s. Try it with kubectl: kubectl get graphrollouts,graphrevisions on the hub.", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func say(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}

// registerSpokes puts one kubeconfig Secret per spoke on the hub, labelled
// with the spoke's ring.
func registerSpokes(ctx context.Context, out io.Writer, c client.Client, fleet *fgtesting.Fleet) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return err
	}
	for _, s := range fleet.Spokes() {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: secret.DefaultNamespace, Name: s.Name,
				Labels: map[string]string{secret.DefaultSecretLabel: "true", secret.LabelPrefix + "ring": rings[s.Name]},
			},
			Data: map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}
		if err := c.Create(ctx, sec); err != nil {
			return fmt.Errorf("registering %s: %w", s.Name, err)
		}
		say(out, "Registered %s with label %sring=%s.", s.Name, secret.LabelPrefix, rings[s.Name])
	}
	return nil
}

func startHub(ctx context.Context, fleet *fgtesting.Fleet) (*sdk.Hub, error) {
	// The local fleet's API servers listen on 127.0.0.1: the provider
	// refuses loopback addresses unless told otherwise.
	provider := secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}})
	mgr, err := mcmanager.New(fleet.Hub.Config, provider, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	if err := provider.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	hub, err := sdk.NewHub(provider, sdk.Options{InstallRGDCRD: true})
	if err != nil {
		return nil, err
	}
	if err := hub.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return hub, nil
}

// applyYAML applies an object to the hub once its kind is served (the hub
// installs the GraphRollout CRD as it starts).
func applyYAML(ctx context.Context, fleet *fgtesting.Fleet, doc string) error {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		return err
	}
	return poll(ctx, func() error {
		c, err := client.New(fleet.Hub.Config, client.Options{}) // a fresh REST mapper each try
		if err != nil {
			return err
		}
		return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("demo"), client.ForceOwnership)
	})
}

func applyRGD(ctx context.Context, c client.Client, text string) error {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if err := yaml.UnmarshalStrict(fmt.Appendf(nil, rgdYAML, text), rgd); err != nil {
		return err
	}
	return poll(ctx, func() error {
		existing := &v1alpha1.ResourceGraphDefinition{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rgd), existing); err != nil {
			return c.Create(ctx, rgd.DeepCopy())
		}
		existing.Spec = rgd.Spec
		return c.Update(ctx, existing)
	})
}

func createGreetings(ctx context.Context, fleet *fgtesting.Fleet) error {
	for _, s := range fleet.Spokes() {
		c, err := client.New(s.Config, client.Options{})
		if err != nil {
			return err
		}
		g := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		g.SetAPIVersion("kro.run/v1alpha1")
		g.SetKind("Greeting")
		g.SetNamespace("default")
		g.SetName("greeting")
		if err := poll(ctx, func() error { return client.IgnoreAlreadyExists(c.Create(ctx, g.DeepCopy())) }); err != nil {
			return fmt.Errorf("creating a Greeting on %s: %w", s.Name, err)
		}
	}
	return nil
}

func poll(ctx context.Context, f func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %w)", err, last)
	}
	return nil
}

// watchRollout prints the rollout each time it changes, until revision rev
// serves every cluster.
func watchRollout(ctx context.Context, out io.Writer, hub *sdk.Hub, rev int64) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		st, ok := hub.Rollout("greeting")
		if !ok {
			return false, nil
		}
		line := describe(st)
		if line != last {
			fmt.Fprintf(out, "    %s  %s\n", time.Now().Format("15:04:05.0"), line)
			last = line
		}
		done := st.Phase == fgv1alpha1.RolloutComplete && st.TargetRevision == rev && len(st.Clusters) == len(rings)
		for _, c := range st.Clusters {
			done = done && c.Revision == rev
		}
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for revision %d everywhere: %w", rev, err)
	}
	printClusters(out, hub)
	return nil
}

func describe(st sdk.RolloutStatus) string {
	var clusters []string
	for _, c := range st.Clusters {
		clusters = append(clusters, fmt.Sprintf("%s=r%d", c.Name, c.Revision))
	}
	return fmt.Sprintf("%-11s target r%d  stable r%d  wave %-6s  %s", st.Phase, st.TargetRevision, st.StableRevision, st.WaveName, strings.Join(clusters, " "))
}

func printClusters(out io.Writer, hub *sdk.Hub) {
	st, _ := hub.Rollout("greeting")
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tWAVE\tREVISION")
	for _, c := range st.Clusters {
		fmt.Fprintf(w, "%s\t%d\tr%d\n", c.Name, c.Wave+1, c.Revision)
	}
	_ = w.Flush()
	fmt.Fprintln(out)
}
