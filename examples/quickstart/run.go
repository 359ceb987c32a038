package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
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

	"github.com/fleetgraph/fleetgraph/examples/internal/keep"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

//go:embed webapp.yaml
var webAppRGD []byte

const timeout = 3 * time.Minute

func run(ctx context.Context, out io.Writer, o options) error {
	start := time.Now()
	say(out, "Starting a hub and %d spokes (real kube-apiserver %s + etcd on loopback)...", o.spokes, fgtesting.KubeVersion)
	fleet, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: o.spokes})
	if err != nil {
		return err
	}
	defer func() { _ = fleet.Stop() }()
	say(out, "Fleet up in %s.", time.Since(start).Round(100*time.Millisecond))

	hubClient, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	if err != nil {
		return err
	}
	if err := registerSpokes(ctx, out, hubClient, fleet); err != nil {
		return err
	}
	hub, err := startHub(ctx, out, fleet)
	if err != nil {
		return err
	}
	if err := applyRGD(ctx, out, hubClient); err != nil {
		return err
	}
	if err := createInstances(ctx, out, hub, fleet); err != nil {
		return err
	}
	if err := waitActive(ctx, out, hub, o.spokes); err != nil {
		return err
	}
	printFleet(out, hub)
	say(out, "Done in %s.", time.Since(start).Round(100*time.Millisecond))
	if o.keep {
		clusters := fleet.Clusters()
		return keep.Fleet(ctx, out, clusters, keep.Options{
			Demo: "quickstart",
			Try: []string{
				"kubectl --context hub get resourcegraphdefinitions -o yaml",
				"kubectl --context " + clusters[len(clusters)-1].Name + " get webapps,configmaps,deployments,services",
				"kubectl --context hub apply -f examples/quickstart/gateways.yaml    # a hub graph over fleet.clusters",
			},
			Notes:  []string{fmt.Sprintf("Hub graphs may target the spokes labelled %s=true: all of them.", meshLabel)},
			OnKept: o.kept,
		})
	}
	say(out, "The fleet is stopped. Run with -keep to keep it and explore it with kubectl, or read examples/embed-manager.")
	return nil
}

// meshLabel is the label every spoke gets (cluster.fleetgraph.dev/mesh=true
// on its Secret): the hub allows hub graphs' targets on clusters so
// labelled, and the README's fleet.clusters examples select them by it.
const meshLabel = "mesh"

// registerSpokes puts one kubeconfig Secret per spoke on the hub, where the
// secret provider finds them.
func registerSpokes(ctx context.Context, out io.Writer, c client.Client, fleet *fgtesting.Fleet) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return err
	}
	for _, s := range fleet.Spokes() {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: secret.DefaultNamespace, Name: s.Name,
				Labels: map[string]string{secret.DefaultSecretLabel: "true", secret.LabelPrefix + meshLabel: "true"},
			},
			Data: map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}
		if err := c.Create(ctx, sec); err != nil {
			return fmt.Errorf("registering %s: %w", s.Name, err)
		}
	}
	say(out, "Registered %d spokes as kubeconfig Secrets in the hub's %q namespace, labelled %s%s=true.", len(fleet.Spokes()), secret.DefaultNamespace, secret.LabelPrefix, meshLabel)
	return nil
}

// startHub is what a platform writes: a secret provider and a fleetgraph Hub
// in one multicluster manager.
func startHub(ctx context.Context, out io.Writer, fleet *fgtesting.Fleet) (*sdk.Hub, error) {
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
	hub, err := sdk.NewHub(nil, sdk.Options{ // nil: the manager's provider
		// Hub graphs whose targets are computed (from the instance or
		// fleet.clusters) may name the clusters labelled mesh=true: every
		// spoke here.
		Targets: sdk.TargetOptions{AllowedClusters: &metav1.LabelSelector{MatchLabels: map[string]string{meshLabel: "true"}}},
		RGDs:    sdk.RGDOptions{InstallCRD: true},
	})
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
	say(out, "Hub running: secret provider + fleetgraph in one multicluster manager; hub graphs may target the spokes labelled %s=true.", meshLabel)
	return hub, nil
}

func applyRGD(ctx context.Context, out io.Writer, c client.Client) error {
	rgds, err := v1alpha1.Load(bytes.NewReader(webAppRGD))
	if err != nil {
		return err
	}
	rgd := rgds[0]
	// The RGD CRD is installed by the hub as it starts; wait until it is served.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, rgd.DeepCopy())
		return err == nil || client.IgnoreAlreadyExists(err) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("applying the WebApp RGD to the hub: %w", err)
	}
	say(out, "Applied ResourceGraphDefinition %q (ConfigMap -> Deployment -> Service) to the hub.", rgd.Name)
	return nil
}

// createInstances creates one WebApp on each spoke, once the hub says the
// spoke can take it: one create, no retry.
func createInstances(ctx context.Context, out io.Writer, hub *sdk.Hub, fleet *fgtesting.Fleet) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, s := range fleet.Spokes() {
		if err := hub.WaitServable(ctx, "webapp", s.Name); err != nil {
			return err
		}
		c, err := client.New(s.Config, client.Options{})
		if err != nil {
			return err
		}
		app := webApp("hello-" + s.Name)
		if err := c.Create(ctx, app); err != nil {
			return fmt.Errorf("creating a WebApp on %s: %w", s.Name, err)
		}
		say(out, "Created WebApp %q on %s.", app.GetName(), s.Name)
	}
	return nil
}

func webApp(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": name}}}
	u.SetAPIVersion("kro.run/v1alpha1")
	u.SetKind("WebApp")
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

func waitActive(ctx context.Context, out io.Writer, hub *sdk.Hub, spokes int) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ready := 0
		for _, c := range hub.FleetStatus("webapp").Clusters {
			ready += c.ReadyInstances
		}
		return ready == spokes, nil
	})
	if err != nil {
		printFleet(out, hub)
		return fmt.Errorf("waiting for every WebApp to be ACTIVE: %w", err)
	}
	say(out, "Every WebApp is ACTIVE; its children live in its own cluster.")
	return nil
}

func printFleet(out io.Writer, hub *sdk.Hub) {
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tCRD\tINSTANCES\tREADY")
	for _, c := range hub.FleetStatus("webapp").Clusters {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", c.Cluster, c.CRD, c.Instances, c.ReadyInstances)
	}
	_ = w.Flush()
	fmt.Fprintln(out)
}
