package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/examples/internal/keep"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

//go:embed mesh.yaml
var meshYAML []byte

const timeout = 2 * time.Minute

// roles says which side of the Mesh each spoke is; each side's objects
// carry it in their names.
var roles = map[string]string{"spoke-1": "east", "spoke-2": "west"}

var meshGVK = schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: "Mesh"}

// side is what one spoke holds of the instance, as read from that spoke.
type side struct {
	Cluster         string
	IngressIP       string // the ingress Service's spec.clusterIP
	IngressUID      string // the ingress Service's metadata.uid
	Upstream        string // the egress ConfigMap's data.upstream
	UpstreamService string // the egress ConfigMap's data.upstreamService: the UID of the Service it points at
	Peer            string // the egress ConfigMap's data.peer
	Bundle          string // the trust bundle Secret's data.bundle
}

// result is what the demo observed, for its test.
type result struct {
	State   string
	Sides   map[string]side
	Cleaned bool // nothing of the instance was left on either spoke
}

// options says how the demo runs.
type options struct {
	// keep keeps the fleet, and the Mesh, after the demo, until ctx ends.
	keep bool
	// kept, if set, is called once the fleet is kept, with its
	// kubeconfigs (for tests).
	kept func(fgtesting.KubeconfigFiles)
}

// demo holds the running fleet's clients.
type demo struct {
	out    io.Writer
	fleet  *fgtesting.Fleet
	hub    client.Client
	spokes map[string]client.Client
}

func run(ctx context.Context, out io.Writer, o options) (*result, error) {
	start := time.Now()
	say(out, "Starting a hub and 2 spokes (real kube-apiserver %s + etcd on loopback)...", fgtesting.KubeVersion)
	fleet, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		return nil, err
	}
	defer func() { _ = fleet.Stop() }()
	d := &demo{out: out, fleet: fleet, spokes: map[string]client.Client{}}
	if d.hub, err = client.New(fleet.Hub.Config, client.Options{}); err != nil {
		return nil, err
	}
	for _, s := range fleet.Spokes() {
		if d.spokes[s.Name], err = client.New(s.Config, client.Options{}); err != nil {
			return nil, err
		}
	}
	if err := d.register(ctx, fleet); err != nil {
		return nil, err
	}
	hubCtx, stopHub := context.WithCancel(ctx)
	defer stopHub()
	if err := startHub(hubCtx, fleet); err != nil {
		return nil, err
	}
	if err := d.applyGraph(ctx); err != nil {
		return nil, err
	}
	res, err := d.mesh(ctx, !o.keep)
	if err != nil {
		return res, err
	}
	say(out, "Done in %s.", time.Since(start).Round(100*time.Millisecond))
	if o.keep {
		return res, keep.Fleet(ctx, out, fleet.Clusters(), keep.Options{
			Demo: "mesh",
			Kept: ", its hub and Mesh \"demo\"",
			Try: []string{
				"kubectl --context hub get resourcegraphdefinitions,meshes",
				"kubectl --context spoke-1 get services,configmaps,secrets",
				"kubectl --context hub delete mesh demo     # cleans both spokes",
			},
			Notes:  []string{"Targets may name the spokes labelled mesh=true: both are."},
			OnKept: o.kept,
		})
	}
	say(out, "The fleet is stopped. Run with -keep to keep it, and the Mesh, and explore them with kubectl.")
	return res, nil
}

func say(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}

// register puts one kubeconfig Secret per spoke on the hub, labelled
// mesh=true: the set of clusters the platform lets a Mesh name.
func (d *demo) register(ctx context.Context, fleet *fgtesting.Fleet) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}
	if err := client.IgnoreAlreadyExists(d.hub.Create(ctx, ns)); err != nil {
		return err
	}
	for _, s := range fleet.Spokes() {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: secret.DefaultNamespace, Name: s.Name,
				Labels: map[string]string{secret.DefaultSecretLabel: "true", secret.LabelPrefix + "mesh": "true"},
			},
			Data: map[string][]byte{secret.DefaultDataKey: s.Kubeconfig},
		}
		if err := d.hub.Create(ctx, sec); err != nil {
			return fmt.Errorf("registering %s: %w", s.Name, err)
		}
		say(d.out, "Registered %s with label %smesh=true.", s.Name, secret.LabelPrefix)
	}
	return nil
}

// startHub runs a Hub with the secret provider and the RGD controller (on
// by default), which serves the RGDs applied to the hub. The Mesh's
// targets are computed from its spec, so the platform must say which
// clusters they may name: here, those labelled mesh=true.
func startHub(ctx context.Context, fleet *fgtesting.Fleet) error {
	// The local fleet's API servers listen on 127.0.0.1: the provider
	// refuses loopback addresses unless told otherwise.
	provider := secret.New(secret.Options{Safety: secret.Safety{AllowLoopback: true}})
	hub, err := sdk.NewHub(provider, sdk.Options{
		Targets: sdk.TargetOptions{AllowedClusters: &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "true"}}},
		RGDs:    sdk.RGDOptions{InstallCRD: true},
	})
	if err != nil {
		return err
	}
	go func() {
		if err := hub.Run(ctx, fleet.Hub.Config); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "hub:", err)
		}
	}()
	return nil
}

// applyGraph creates mesh.yaml's RGD on the hub, as kubectl apply does,
// and waits until the hub has accepted it and serves the Mesh kind; a
// refusal is reported at once, with the hub's reason.
func (d *demo) applyGraph(ctx context.Context) error {
	rgd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(meshYAML, &rgd.Object); err != nil {
		return fmt.Errorf("mesh.yaml: %w", err)
	}
	err := poll(ctx, func() error {
		c, err := client.New(d.fleet.Hub.Config, client.Options{}) // a fresh REST mapper each try
		if err != nil {
			return err
		}
		return client.IgnoreAlreadyExists(c.Create(ctx, rgd.DeepCopy()))
	})
	if err != nil {
		return fmt.Errorf("applying mesh.yaml: %w", err)
	}
	err = poll(ctx, func() error {
		if err := d.hub.Get(ctx, client.ObjectKeyFromObject(rgd), rgd); err != nil {
			return err
		}
		accepted, ready := conditions(rgd)
		if accepted.Status == metav1.ConditionFalse && accepted.Reason == "InvalidResourceGraph" {
			return final{fmt.Errorf("the hub refused mesh.yaml: %s", accepted.Message)}
		}
		if ready.Status != metav1.ConditionTrue {
			return fmt.Errorf("RGD mesh is not Ready: %s %s", ready.Reason, ready.Message)
		}
		return nil
	})
	if err != nil {
		return err
	}
	say(d.out, "Applied mesh.yaml to the hub: ResourceGraphDefinition \"mesh\" is Ready; the hub serves kind Mesh.")
	return nil
}

// conditions returns the RGD's accepted and ready conditions (zero when
// not set yet).
func conditions(u *unstructured.Unstructured) (accepted, ready metav1.Condition) {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rgd) != nil {
		return accepted, ready
	}
	if c := meta.FindStatusCondition(rgd.Status.Conditions, v1alpha1.ConditionGraphAccepted); c != nil {
		accepted = *c
	}
	if c := meta.FindStatusCondition(rgd.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		ready = *c
	}
	return accepted, ready
}

// mesh creates the instance and shows what each spoke holds once it is
// ACTIVE; then, if del, deletes it and waits until both spokes are clean.
func (d *demo) mesh(ctx context.Context, del bool) (*result, error) {
	m := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"east": "spoke-1", "west": "spoke-2"}}}
	m.SetGroupVersionKind(meshGVK)
	m.SetNamespace("default")
	m.SetName("demo")
	if err := poll(ctx, func() error { return client.IgnoreAlreadyExists(d.hub.Create(ctx, m.DeepCopy())) }); err != nil {
		return nil, fmt.Errorf("creating Mesh demo on the hub: %w", err)
	}
	say(d.out, "Created Mesh \"demo\" on the hub: east=spoke-1, west=spoke-2.")
	res := &result{Sides: map[string]side{}}
	if err := poll(ctx, func() error {
		res.State = d.state(ctx)
		if res.State != "ACTIVE" {
			return fmt.Errorf("Mesh demo is %q", res.State)
		}
		return nil
	}); err != nil {
		return res, err
	}
	say(d.out, "Mesh \"demo\" on the hub: status.state=%s", res.State)
	for _, c := range []string{"spoke-1", "spoke-2"} {
		s, err := d.side(ctx, c, "demo-", roles[c])
		if err != nil {
			return res, fmt.Errorf("reading %s: %w", c, err)
		}
		res.Sides[c] = s
		say(d.out, "%s: Service demo-ingress-%s at %s; ConfigMap demo-egress-%s upstream=%s peer=%s; Secret demo-trust-%s bundle %.8s...", c, roles[c], s.IngressIP, roles[c], s.Upstream, s.Peer, roles[c], s.Bundle)
	}
	if !del {
		return res, nil
	}
	say(d.out, "Deleting Mesh \"demo\" on the hub...")
	if err := d.hub.Delete(ctx, m); err != nil {
		return res, err
	}
	if err := poll(ctx, func() error { return d.leftOver(ctx, "demo-") }); err != nil {
		return res, err
	}
	res.Cleaned = true
	say(d.out, "Both spokes are clean: no Service, ConfigMap or Secret named demo-* is left on spoke-1 or spoke-2.")
	return res, nil
}

func (d *demo) state(ctx context.Context) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(meshGVK)
	if err := d.hub.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, u); err != nil {
		return err.Error()
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return s
}

// side reads what one spoke holds of the named instance.
func (d *demo) side(ctx context.Context, cluster, prefix, role string) (side, error) {
	c := d.spokes[cluster]
	key := func(kind string) client.ObjectKey {
		return client.ObjectKey{Namespace: "default", Name: prefix + kind + "-" + role}
	}
	svc, cm, sec := &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}
	if err := c.Get(ctx, key("ingress"), svc); err != nil {
		return side{}, err
	}
	if err := c.Get(ctx, key("egress"), cm); err != nil {
		return side{}, err
	}
	if err := c.Get(ctx, key("trust"), sec); err != nil {
		return side{}, err
	}
	return side{Cluster: cluster, IngressIP: svc.Spec.ClusterIP, IngressUID: string(svc.UID), Upstream: cm.Data["upstream"], UpstreamService: cm.Data["upstreamService"], Peer: cm.Data["peer"], Bundle: string(sec.Data["bundle"])}, nil
}

// leftOver names the first object of the instance still on a spoke: it
// lists every Service, ConfigMap and Secret named after the instance,
// whichever side's name it has.
func (d *demo) leftOver(ctx context.Context, prefix string) error {
	for cluster, c := range d.spokes {
		for _, list := range []client.ObjectList{&corev1.ServiceList{}, &corev1.ConfigMapList{}, &corev1.SecretList{}} {
			if err := c.List(ctx, list, client.InNamespace("default")); err != nil {
				return err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return err
			}
			for _, it := range items {
				if o := it.(client.Object); strings.HasPrefix(o.GetName(), prefix) {
					return fmt.Errorf("%T %s still on %s", o, o.GetName(), cluster)
				}
			}
		}
	}
	return nil
}

// poll calls f until it returns nil, a final error, or timeout passes.
func poll(ctx context.Context, f func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = f()
		var stop final
		if errors.As(last, &stop) {
			return false, stop.error
		}
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.As(last, new(final)):
		return err
	}
	return fmt.Errorf("%w (last: %w)", err, last)
}

// final is an error poll does not retry.
type final struct{ error }
