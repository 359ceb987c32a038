package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/examples/internal/keep"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

//go:embed greeting.yaml
var greetingYAML []byte

//go:embed rollout.yaml
var rolloutYAML []byte

const (
	timeout = 3 * time.Minute
	// graphName is the RGD's and the GraphRollout's name.
	graphName = "greeting"
	// heldCluster is the cluster the demo holds, and holdReason why.
	heldCluster, holdReason = "spoke-3", "change freeze"
	// secondText is revision 2's greeting; revision 1's is greeting.yaml's.
	secondText = "hello, world"
)

// rings puts spoke-1 in the canary ring, the others in the main ring.
var rings = map[string]string{"spoke-1": "canary", "spoke-2": "main", "spoke-3": "main"}

// options says how the demo runs.
type options struct {
	// keep keeps the fleet running after the demo, until ctx ends.
	keep bool
	// kept, if set, is called once the fleet is kept, with its
	// kubeconfigs (for tests).
	kept func(fgtesting.KubeconfigFiles)
}

// demo holds the running fleet and what the demo learnt of it.
type demo struct {
	out   io.Writer
	fleet *fgtesting.Fleet
	hub   *sdk.Hub
	hubc  client.Client
	waves []string // the GraphRollout's wave names, in order
}

func run(ctx context.Context, out io.Writer, o options) error {
	start := time.Now()
	say(out, "Starting a hub and 3 spokes (real kube-apiserver %s + etcd on loopback)...", fgtesting.KubeVersion)
	fleet, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 3})
	if err != nil {
		return err
	}
	defer func() { _ = fleet.Stop() }()
	d := &demo{out: out, fleet: fleet}
	if d.hubc, err = client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()}); err != nil {
		return err
	}
	if err := d.registerSpokes(ctx); err != nil {
		return err
	}
	if d.hub, err = startHub(ctx, fleet); err != nil {
		return err
	}
	if err := d.story(ctx); err != nil {
		return err
	}
	say(out, "Done in %s.", time.Since(start).Round(100*time.Millisecond))
	if o.keep {
		return keep.Fleet(ctx, out, fleet.Clusters(), keep.Options{
			Demo: "rollout",
			Try: []string{
				"kubectl --context hub get graphrollouts,graphrevisions",
				"kubectl --context hub get events -A --field-selector involvedObject.name=" + graphName,
				"kubectl --context " + heldCluster + " get greetings,configmaps",
			},
			Notes:  []string{"The hub lets hub graphs (resources with a target) target any spoke."},
			OnKept: o.kept,
		})
	}
	say(out, "The fleet is stopped. Run with -keep to keep it and explore it with kubectl or the fleetgraph command.")
	return nil
}

// story is the demo proper: revision 1 everywhere, a hold, revision 2
// through an approval, and revision 3 failing on the canary and rolled
// back.
func (d *demo) story(ctx context.Context) error {
	ro, err := d.applyRollout(ctx)
	if err != nil {
		return err
	}
	for _, w := range ro.Spec.Waves {
		d.waves = append(d.waves, w.Name)
	}
	if err := d.applyRGD(ctx); err != nil {
		return err
	}
	say(d.out, "Applied ResourceGraphDefinition %q (one ConfigMap per Greeting, text %q) to the hub: revision 1.", graphName, "hello")
	if err := d.createGreetings(ctx); err != nil {
		return err
	}
	first, err := d.watch(ctx, 0, complete)
	if err != nil {
		return err
	}
	if err := d.hold(ctx); err != nil {
		return err
	}
	say(d.out, "Changing the greeting's text to %q: revision 2.", secondText)
	if err := d.applyRGD(ctx, setText(secondText)); err != nil {
		return err
	}
	second, err := d.watch(ctx, first.TargetRevision, complete)
	if err != nil {
		return err
	}
	say(d.out, "Revision 3 adds a readiness check on data.ready, a key its template never writes: no Greeting it serves becomes Ready.")
	if err := d.applyRGD(ctx, setText(secondText), requireReadyKey); err != nil {
		return err
	}
	third, err := d.watch(ctx, second.TargetRevision, rolledBack)
	if err != nil {
		return err
	}
	say(d.out, "Revision %d failed on the canary and went back to revision %d by itself: %s", third.TargetRevision, third.StableRevision, third.RollbackReason)
	d.printClusters(third)
	return nil
}

func say(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}

// registerSpokes puts one kubeconfig Secret per spoke on the hub, labelled
// with the spoke's ring.
func (d *demo) registerSpokes(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}
	if err := client.IgnoreAlreadyExists(d.hubc.Create(ctx, ns)); err != nil {
		return err
	}
	for _, s := range d.fleet.Spokes() {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: secret.DefaultNamespace, Name: s.Name,
				Labels: map[string]string{secret.DefaultSecretLabel: "true", secret.LabelPrefix + "ring": rings[s.Name]},
			},
			Data: map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}
		if err := d.hubc.Create(ctx, sec); err != nil {
			return fmt.Errorf("registering %s: %w", s.Name, err)
		}
		say(d.out, "Registered %s with label %sring=%s.", s.Name, secret.LabelPrefix, rings[s.Name])
	}
	return nil
}

// startHub runs a Hub with the secret provider and the RGD controller (on
// by default): the demo applies its graph as YAML, as a user would.
func startHub(ctx context.Context, fleet *fgtesting.Fleet) (*sdk.Hub, error) {
	// The local fleet's API servers listen on 127.0.0.1: the provider
	// refuses loopback addresses unless told otherwise.
	provider := secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}})
	hub, err := sdk.NewHub(provider, sdk.Options{
		// Hub graphs (resources with a target) may name any spoke, their
		// targets computed or not: what a kept fleet needs to try them.
		Targets: sdk.TargetOptions{AllowedClusters: &metav1.LabelSelector{}},
		RGDs:    sdk.RGDOptions{InstallCRD: true},
	})
	if err != nil {
		return nil, err
	}
	go func() {
		if err := hub.Run(ctx, fleet.Hub.Config); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "hub:", err)
		}
	}()
	return hub, nil
}

// applyRollout creates rollout.yaml's GraphRollout on the hub once its
// kind is served (the hub installs the CRD as it starts).
func (d *demo) applyRollout(ctx context.Context) (*fgv1alpha1.GraphRollout, error) {
	ro := &fgv1alpha1.GraphRollout{}
	if err := yaml.UnmarshalStrict(rolloutYAML, ro); err != nil {
		return nil, fmt.Errorf("rollout.yaml: %w", err)
	}
	if err := createYAML(ctx, d.fleet, rolloutYAML); err != nil {
		return nil, fmt.Errorf("applying rollout.yaml: %w", err)
	}
	say(d.out, "Applied GraphRollout %q: wave canary (ring=canary), then wave main (ring=main, approval Required); 100%% Ready for 3s; a wave not healthy in %ds fails and is rolled back.", ro.Name, ro.Spec.ProgressDeadlineSeconds)
	return ro, nil
}

// createYAML creates the object of a YAML document on the hub, as
// kubectl apply does for a new object, retrying until its kind is served.
func createYAML(ctx context.Context, fleet *fgtesting.Fleet, doc []byte) error {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		return err
	}
	return poll(ctx, func() error {
		c, err := client.New(fleet.Hub.Config, client.Options{}) // a fresh REST mapper each try
		if err != nil {
			return err
		}
		return client.IgnoreAlreadyExists(c.Create(ctx, u.DeepCopy()))
	})
}

// applyRGD writes greeting.yaml's RGD to the hub with the given edits: it
// creates it the first time, and updates its spec afterwards.
func (d *demo) applyRGD(ctx context.Context, edits ...func(*unstructured.Unstructured) error) error {
	want := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(greetingYAML, &want.Object); err != nil {
		return fmt.Errorf("greeting.yaml: %w", err)
	}
	for _, edit := range edits {
		if err := edit(want); err != nil {
			return err
		}
	}
	if len(edits) == 0 {
		return createYAML(ctx, d.fleet, greetingYAML)
	}
	return poll(ctx, func() error {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		if err := d.hubc.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			return err
		}
		got.Object["spec"] = want.Object["spec"]
		return d.hubc.Update(ctx, got)
	})
}

// setText sets the greeting's text.
func setText(text string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		return editMessage(u, func(m map[string]any) error {
			return unstructured.SetNestedField(m, text, "template", "data", "text")
		})
	}
}

// requireReadyKey is revision 3's bug: the message is Ready only once its
// data has a key "ready", which the template never writes.
func requireReadyKey(u *unstructured.Unstructured) error {
	return editMessage(u, func(m map[string]any) error {
		m["readyWhen"] = []any{"${has(message.data.ready)}"}
		return nil
	})
}

// editMessage edits the RGD's only resource, "message".
func editMessage(u *unstructured.Unstructured, edit func(map[string]any) error) error {
	resources, _, err := unstructured.NestedSlice(u.Object, "spec", "resources")
	if err != nil || len(resources) != 1 {
		return fmt.Errorf("greeting.yaml: want one resource, the message (%v)", err)
	}
	m, ok := resources[0].(map[string]any)
	if !ok {
		return errors.New("greeting.yaml: the message is not an object")
	}
	if err := edit(m); err != nil {
		return err
	}
	return unstructured.SetNestedSlice(u.Object, resources, "spec", "resources")
}

// createGreetings creates one Greeting on each spoke, once it serves the
// kind.
func (d *demo) createGreetings(ctx context.Context) error {
	for _, s := range d.fleet.Spokes() {
		if err := d.hub.WaitServable(ctx, graphName, s.Name); err != nil {
			return err
		}
		c, err := client.New(s.Config, client.Options{})
		if err != nil {
			return err
		}
		g := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		g.SetAPIVersion("kro.run/v1alpha1")
		g.SetKind("Greeting")
		g.SetNamespace("default")
		g.SetName(graphName)
		if err := c.Create(ctx, g); err != nil {
			return fmt.Errorf("creating a Greeting on %s: %w", s.Name, err)
		}
	}
	say(d.out, "Created a Greeting on every spoke.")
	return nil
}

// hold pins heldCluster to the revision it serves, as `fleetgraph rollout
// hold` does, and waits until the rollout says so.
func (d *demo) hold(ctx context.Context) error {
	if err := d.hub.Hold(ctx, graphName, heldCluster, holdReason); err != nil {
		return err
	}
	err := poll(ctx, func() error {
		st, _ := d.hub.Rollout(graphName)
		for _, c := range st.Clusters {
			if c.Name == heldCluster && c.Held {
				return nil
			}
		}
		return fmt.Errorf("%s is not held yet", heldCluster)
	})
	if err != nil {
		return err
	}
	say(d.out, "Held %s (%q): it keeps the revision it serves whatever the rollout does.", heldCluster, holdReason)
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
