package sdk

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/cleanup"
	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/hubgraph"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// A graph whose resources carry a target (graph.Graph.IsHubGraph) is a hub
// graph: it is not fanned out to the spokes; its CRD is applied on the hub
// cluster and its instances are reconciled there by a runtime of its own
// (internal/hubgraph), which writes each resource into its target cluster.

// TargetOptions say where hub graphs may write. Every target must name an
// engaged cluster; when AllowedClusters or Allow is set, every target must
// also pass them. A target computed from an instance (${...}) is refused
// unless one of them is set, and must also fall within the RGD's own
// spec.target.allowedClusters when it has one.
type TargetOptions struct {
	// AllowedClusters selects, by the labels the provider gives them (see
	// ClusterLabeler), the clusters targets may name. When it or Allow is
	// set, fleet.clusters shows a graph only the clusters its instance may
	// use. Defaults to nil: no selector.
	AllowedClusters *metav1.LabelSelector
	// Allow, when set, is asked about every target of every instance
	// before anything of the instance is written; an error refuses the
	// instance (ERROR, condition TargetsAllowed=False naming the resource,
	// the cluster and the error). For a graph that reads fleet.clusters it
	// is also asked about each engaged cluster each time an instance's
	// targets are resolved, and the clusters it refuses are not shown.
	// It must be safe to call concurrently. Defaults to nil.
	Allow func(ctx context.Context, g *graph.Graph, instance *unstructured.Unstructured, cluster string) error
	// FleetPoll is how often hub graphs that read fleet.clusters look for
	// a cluster that joined, left or was relabelled. A provider that says
	// when labels change (hub.ClusterLabelNotifier, as providers/secret
	// does) has relabels followed at once, and the poll is the fallback.
	// Defaults to 2 seconds.
	FleetPoll time.Duration
	// HubName is written on every child of a hub instance (label
	// fleetgraph.dev/hub), so that hubs sharing clusters never take each
	// other's children. Defaults to the UID of the hub cluster's
	// kube-system namespace.
	HubName string
	// CallTimeout bounds each call the hub graphs' runtime makes to a
	// cluster: a target that does not answer within it is unreachable for
	// the rest of that reconcile, and only the resources on it and their
	// dependents wait. Defaults to 30 seconds.
	CallTimeout time.Duration
	// AbandonAfter is how long the deletion of a hub instance waits for a
	// target cluster it cannot reach (its API server does not answer, or
	// it left the fleet) before going on without it: the finalizer is
	// then removed once every other cluster is clean, and what the
	// instance had on that cluster is left there, still labelled as its
	// children (fleetgraph.dev/hub, fleetgraph.dev/instance-uid); an
	// event (reason ChildrenAbandoned) on the instance and the log name
	// the cluster, those labels and the children last seen there. If the
	// cluster answers again while this hub still watches it, those
	// children are collected as orphans (OrphanGrace). The grace counts
	// from the first time the deletion found the cluster unreachable
	// (recorded on the instance, so a restart keeps it). Nothing is
	// deleted that is not the instance's own. Defaults to 0: the deletion
	// waits until the cluster is back.
	AbandonAfter time.Duration
}

// SecretClusterMapper is implemented by providers that can say which
// engaged cluster comes from a kubeconfig Secret: targets written in
// KREP-012's form (kubeconfigSecretName, kubeconfigSecretNamespace) need
// it, and are refused with any other provider. SecretCluster returns the
// cluster's name and true when it is engaged (or being engaged: the hub
// checks it is, as for a named target); the name and false when the
// Secret is known but its cluster is not engaged; "" and false for a
// Secret the provider does not read. providers/secret implements it.
type SecretClusterMapper interface {
	SecretCluster(namespace, name string) (multicluster.ClusterName, bool)
}

// newHubGraphs makes the runtime of hub graphs. Its instances are served
// with the spoke runtime's options (the same engine serves both), but for
// calls to a cluster, bounded by Targets.CallTimeout.
func (h *Hub) newHubGraphs(instances spoke.Options) *hubgraph.Runtime {
	stamp := hubStamp{h: h, disabled: h.opts.DisableAdmissionPolicy, admissions: hub.NewAdmissions(hub.Options{
		FieldManager: h.opts.FieldManager,
		Logger:       h.opts.Logger.WithName("hubgraph-admission"),
	})}
	opts := hubgraph.Options{
		Stamp:    stamp,
		Clusters: hubClusters{h},
		Policy: hubgraph.Policy{
			Selector: h.opts.Targets.AllowedClusters,
			Allow:    h.opts.Targets.Allow,
		},
		HubName:      h.opts.Targets.HubName,
		AbandonAfter: h.opts.Targets.AbandonAfter,
		FleetPoll:    h.opts.Targets.FleetPoll,
		Instances:    instance.Options(instances),
	}
	opts.Instances.CallTimeout = h.opts.Targets.CallTimeout
	opts.Instances.Logger = h.opts.Logger.WithName("hubgraph")
	return hubgraph.New(opts)
}

// serveHubGraph serves g on the hub instead of on the spokes: a graph
// that gained targets stops being served by the spoke runtime (its spoke
// instances stay as they are).
func (h *Hub) serveHubGraph(g *graph.Graph) error {
	h.runtime.Stop(g.Name)
	if err := h.hubGraphs.Serve(g); err != nil {
		return fmt.Errorf("serving hub graph %s: %w", g.Name, err)
	}
	return nil
}

// hubGraphRemovalStep is a removal step of a hub graph: its instances are
// on the hub only, so it waits until none holds the finalizer, then stops
// the graph there and, with Options.DeleteCRDsOnUnregister, deletes its
// CRD from the hub if no instance is left. The graph's admission policy
// goes from the hub first, and is waited out, so that no new instance is
// held.
func (h *Hub) hubGraphRemovalStep(ctx context.Context, g *graph.Graph) error {
	off, err := h.hubGraphs.Unstamp(ctx, g.Name)
	if err != nil {
		return fmt.Errorf("removing the admission policy of hub graph %s: %w", g.Name, err)
	}
	if time.Since(off) < policySettle {
		return fmt.Errorf("%w: hub graph %s's admission policy removed %s ago", errHeld, g.Name, time.Since(off).Round(time.Millisecond))
	}
	held, err := h.hubGraphs.Held(ctx, g.Name)
	if err != nil {
		return err
	}
	if held > 0 {
		return fmt.Errorf("%w: %d instances of hub graph %s", errHeld, held, g.Name)
	}
	h.hubGraphs.Stop(g.Name)
	if !h.opts.DeleteCRDsOnUnregister {
		return nil
	}
	return h.deleteHubGraphCRD(ctx, g)
}

// deleteHubGraphCRD deletes a hub graph's CRD from the hub once no
// instance of it is left there: what Options.DeleteCRDsOnUnregister does
// on the spokes for the graphs served there. Call it once the graph is
// stopped. The hub cache's informer of the instance kind goes first, so
// that nothing keeps watching a kind about to disappear. A CRD that is not
// labelled as fleetgraph's, or that still has an instance (a released
// one, with OrphanInstances), stays; so does one that cannot be read,
// which the caller retries.
func (h *Hub) deleteHubGraphCRD(ctx context.Context, g *graph.Graph) error {
	local := h.mgr.GetLocalManager()
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(g.Instance.GVK)
	if err := local.GetCache().RemoveInformer(ctx, inst); err != nil {
		return fmt.Errorf("stopping the hub's watch of %s: %w", g.Instance.GVK.Kind, err)
	}
	noPolicy := func(context.Context, hub.Cluster) error { return nil }
	if err := cleanup.DeleteUnusedCRDs(ctx, []hub.Cluster{{Cluster: local}}, g, noPolicy); err != nil {
		return fmt.Errorf("deleting the CRD of hub graph %s from the hub: %w", g.Name, err)
	}
	return nil
}

// hubClusters gives the hub graphs' runtime the hub cluster and the
// engaged ones, from the Hub's own registry (not mgr.GetCluster, which
// bypasses sharding's ownership).
type hubClusters struct{ h *Hub }

var _ hubgraph.Clusters = hubClusters{}

func (c hubClusters) Hub() cluster.Cluster { return c.h.mgr.GetLocalManager() }

func (c hubClusters) Cluster(_ context.Context, name string) (cluster.Cluster, error) {
	c.h.mu.Lock()
	e := c.h.clusters[name]
	c.h.mu.Unlock()
	if e == nil && c.h.pull.is(name) { // pull.go
		return nil, errPullTarget
	}
	if e == nil || e.ctx.Err() != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, multicluster.ErrClusterNotFound)
	}
	return e.cl, nil
}

func (c hubClusters) Names() []string {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	out := make([]string, 0, len(c.h.clusters))
	for name, e := range c.h.clusters {
		if name != "" && e.ctx.Err() == nil {
			out = append(out, name)
		}
	}
	return out
}

func (c hubClusters) Labels(name string) map[string]string {
	return c.h.clusterSource.labels(multicluster.ClusterName(name))
}

func (c hubClusters) SecretCluster(namespace, name string) (string, bool) {
	m, ok := c.h.provider.(SecretClusterMapper)
	if !ok {
		return "", false
	}
	n, ok := m.SecretCluster(namespace, name)
	return string(n), ok
}

// hubStamp installs hub graphs' admission policies on the hub cluster
// (hubgraph.Stamp), with hub.Admissions: the same activation as spokes',
// under a name of its own (hubgraph.StampPolicyName). With
// DisableAdmissionPolicy it installs none, but still removes the policy an
// earlier configuration may have installed.
type hubStamp struct {
	h          *Hub
	disabled   bool
	admissions *hub.Admissions
}

var _ hubgraph.Stamp = hubStamp{}

func (s hubStamp) Install(ctx context.Context, g *graph.Graph) {
	if !s.disabled {
		s.admissions.Activate(ctx, s.cluster(), g.Name, hubAdmissionOf(g))
	}
}

// Remove takes the policy off. With the policy disabled, a hub that may
// not delete policies could not have installed one either: a refusal is
// not an error then, lest it hold the graph's removal forever.
func (s hubStamp) Remove(ctx context.Context, g *graph.Graph) error {
	err := s.admissions.Remove(ctx, s.cluster(), g.Name, hubAdmissionOf(g))
	if s.disabled && apierrors.IsForbidden(err) {
		return nil
	}
	return err
}

// cluster is the hub cluster, named as hub graphs name it ("").
func (s hubStamp) cluster() hub.Cluster {
	return hub.Cluster{Name: "", Cluster: hubClusters{s.h}.Hub()}
}

// hubAdmissionOf is the hub graph g's admission policy and its probe.
func hubAdmissionOf(g *graph.Graph) *hub.Admission {
	policy, probe := hubgraph.StampPolicy(g)
	return &hub.Admission{
		Policy: policy[0], Binding: policy[1],
		ProbePolicy: probe[0], ProbeBinding: probe[1],
		ProbeObject: contract.AdmissionProbeObject(g),
	}
}
