package hubgraph

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// Labels and annotations this package adds to the spoke runtime's
// contract.
const (
	// LabelHub, on a child of a hub instance, is the identity of the hub
	// that wrote it (Options.HubName): two hubs writing into one cluster
	// never take each other's children.
	LabelHub = "fleetgraph.dev/hub"
	// AnnotationClusters, on a hub instance, lists (as a JSON array) every
	// cluster it may have children in, the hub's own as "". A cluster is
	// added before anything is written to it.
	AnnotationClusters = "fleetgraph.dev/target-clusters"
)

// ErrStopped is returned by Serve once the Runtime's manager stopped.
var ErrStopped = errors.New("hubgraph: the runtime has stopped")

// Clusters is how the Runtime reaches the clusters targets name.
type Clusters interface {
	// Hub returns the hub cluster: hub graphs' CRDs and instances live
	// there, and so do their untargeted resources. It is asked for once
	// the Runtime started.
	Hub() cluster.Cluster
	// Cluster returns the engaged cluster of that name, or an error when
	// no cluster of that name is engaged. The hub's own cluster is never
	// asked for: the Runtime uses Hub.
	Cluster(ctx context.Context, name string) (cluster.Cluster, error)
	// Names returns the engaged clusters' names, the hub's own excluded:
	// the fleet variable lists them.
	Names() []string
	// Labels returns the labels of an engaged cluster (nil when none).
	Labels(name string) map[string]string
	// SecretCluster returns the name of the cluster engaged from the
	// kubeconfig Secret namespace/name, and false when none is (with the
	// name of its cluster when the Secret is known but its cluster is
	// not engaged).
	SecretCluster(namespace, name string) (string, bool)
}

// Policy is what the platform allows targets to name. Every target must
// name an engaged cluster; when Selector or Allow is set, every target must
// also pass them. A target computed from an instance is refused unless one
// of them is set.
type Policy struct {
	// Selector selects, by their labels (Clusters.Labels), the clusters
	// targets may name. Nil allows any as far as it is concerned.
	Selector *metav1.LabelSelector
	// Allow, when set, is asked about every target of every instance
	// before anything is written; an error refuses the instance and is
	// shown in its condition. It also decides which clusters
	// fleet.clusters shows each instance (targets.visible).
	Allow func(ctx context.Context, g *graph.Graph, instance *unstructured.Unstructured, cluster string) error
}

// Options configure a Runtime.
type Options struct {
	// Clusters reaches the hub and the target clusters. Required.
	Clusters Clusters
	// Policy is what targets may name. Its zero value allows literal
	// targets naming engaged clusters and refuses computed ones.
	Policy Policy
	// HubName is the value of LabelHub on the children this hub writes.
	// Defaults to the UID of the hub cluster's kube-system namespace.
	HubName string
	// AbandonAfter is how long the deletion of an instance waits for a
	// target cluster it cannot reach (frozen, or gone from the fleet)
	// before it goes on without it, leaving the instance's children there
	// (the engine's Config.AbandonAfter). Defaults to 0: it waits until
	// the cluster is back.
	AbandonAfter time.Duration
	// Stamp, when set, installs each graph's admission policy on the hub
	// once its CRD is Established there, and removes it when the graph is
	// removed or stops being served here (stamp.go). Defaults to nil: the
	// runtime writes the finalizer and clusters of every new instance
	// itself, one request more each.
	Stamp Stamp
	// FleetPoll is how often a graph that reads the fleet variable
	// (fleet.clusters) looks for a cluster that joined, left or was
	// relabelled; a relabel told through Runtime.ClusterLabelsChanged is
	// followed at once. Defaults to DefaultFleetPoll.
	FleetPoll time.Duration
	// Instances are the options every instance engine shares, as the
	// spoke runtime takes them (the public spoke.Options is their
	// contract): the field manager, call timeout, resync, workers,
	// adoption, confinement, orphan grace, CountsChanged (told of every
	// event of a graph's instances on the hub, so that Tally can follow
	// at once) and logger hold for hub graphs as for spokes.
	Instances instance.Options
}

func (o Options) withDefaults() Options {
	if o.FleetPoll <= 0 {
		o.FleetPoll = DefaultFleetPoll
	}
	if o.Instances.Logger.GetSink() == nil {
		o.Instances.Logger = logr.Discard()
	}
	o.Instances = o.Instances.WithDefaults()
	return o
}

// Runtime serves hub graphs on the hub cluster. Add it to the hub's
// manager; Serve and Stop work before and after the manager starts. Its
// methods are safe for concurrent use.
type Runtime struct {
	opts Options

	// mu guards ctx, hubName, graphs and seq. Serve and Stop hold it
	// while they start or stop a server; nothing holding a server's lock
	// takes it.
	mu      sync.Mutex
	ctx     context.Context // the manager's, once started
	hubName string          // the identity read (see identity)
	graphs  map[string]*server
	seq     int

	// handles are the clusters as the instance engines reach them
	// (clusters.go).
	handles clusterHandles
}

var _ manager.Runnable = &Runtime{}

// New returns a Runtime.
func New(opts Options) *Runtime {
	return &Runtime{opts: opts.withDefaults(), graphs: map[string]*server{}, handles: clusterHandles{m: map[string]*instance.Cluster{}}}
}

// Start runs the graphs served so far and those served later, until ctx
// ends. It does no I/O: each graph reads the hub's identity (HubName's
// default) when it starts, and retries.
func (r *Runtime) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	for _, s := range r.graphs {
		s.start(ctx)
	}
	r.mu.Unlock()
	every(ctx, sweepEvery, nil, r.sweep) // clusters.go
	return nil
}

func (r *Runtime) hub() cluster.Cluster { return r.opts.Clusters.Hub() }

// callCtx bounds one call to a cluster.
func (r *Runtime) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return instance.CallContext(ctx, r.opts.Instances.CallTimeout)
}

// identity is Options.HubName, or the hub's kube-system namespace UID,
// read once.
func (r *Runtime) identity(ctx context.Context) (string, error) {
	r.mu.Lock()
	name := r.hubName
	r.mu.Unlock()
	if name != "" {
		return name, nil
	}
	if r.opts.HubName != "" {
		return r.opts.HubName, nil
	}
	ns := &corev1.Namespace{}
	cctx, cancel := r.callCtx(ctx)
	defer cancel()
	if err := r.hub().GetAPIReader().Get(cctx, client.ObjectKey{Name: "kube-system"}, ns); err != nil {
		return "", fmt.Errorf("hubgraph: reading the hub's identity (namespace kube-system): %w", err)
	}
	r.mu.Lock()
	r.hubName = string(ns.UID)
	r.mu.Unlock()
	return string(ns.UID), nil
}

// Serve serves g (a hub graph) in place of any graph of its name.
func (r *Runtime) Serve(g *graph.Graph) error {
	if !g.IsHubGraph() {
		return fmt.Errorf("hubgraph: %s has no target", g)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx != nil && r.ctx.Err() != nil {
		return ErrStopped
	}
	if old := r.graphs[g.Name]; old != nil {
		old.stop()
	}
	r.seq++
	s := newServer(r, g, r.seq)
	r.graphs[g.Name] = s
	if r.ctx != nil {
		s.start(r.ctx)
	}
	return nil
}

// Stop stops serving the named graph; its instances and children stay as
// they are. Its admission policy goes from the hub in the background
// (stamp.go), so new instances are no longer stamped with a finalizer
// nothing would release.
func (r *Runtime) Stop(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.graphs[name]; s != nil {
		s.stop()
		delete(r.graphs, name)
		if r.ctx != nil && r.ctx.Err() == nil {
			s.unstampLater(r.ctx)
		}
	}
}

// Serves reports whether the named graph is served here.
func (r *Runtime) Serves(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.graphs[name] != nil
}
