package hubgraph

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// New hub instances are stamped in the request that creates them: a
// MutatingAdmissionPolicy on the hub (Options.Stamp installs it) adds the
// finalizer, the graph's child kinds (as the spoke runtime's policy does)
// and, in AnnotationClusters, every cluster the graph's literal targets
// name, the hub's own included. An instance that arrives with
// both, and whose targets name no other cluster, is not written before
// its children (record in reconcile.go): a new instance costs its applies
// and its status write. Without the policy (the hub's API server lacks the
// API, the policy is not bound yet, or it is disabled), and for clusters a
// computed or Secret target names, record writes them before anything is
// written there, as before.

// Stamp installs and removes a hub graph's admission policy on the hub
// cluster (the sdk implements it with hub.Admissions). Install is called
// once the graph's CRD is Established on the hub, with the server's
// context; it must return at once and bind the policy (StampPolicy) in the
// background, only where the API server can run it. Remove must stop
// that, and delete the policy; it is retried on error.
type Stamp interface {
	Install(ctx context.Context, g *graph.Graph)
	Remove(ctx context.Context, g *graph.Graph) error
}

// StampPolicyName is the name of the policy and binding StampPolicy
// returns for g: not the spoke runtime's, so that a hub cluster that is a
// spoke too, and a graph that gains or loses targets, never confuse the
// two.
func StampPolicyName(g *graph.Graph) string {
	return "fleetgraph-hub." + g.Instance.Plural + "." + g.Instance.GVK.Group
}

// StampPolicy returns the MutatingAdmissionPolicy, and its binding, that
// stamp new instances of the hub graph g, and the probe policy and binding
// that tell when it can be bound (contract.AdmissionProbe).
func StampPolicy(g *graph.Graph) (policy, probe []client.Object) {
	b, _ := json.Marshal(LiteralClusters(g))
	policy = contract.StampPolicy(g, StampPolicyName(g), map[string]string{
		AnnotationClusters:            string(b),
		contract.AnnotationChildKinds: contract.EncodeChildKinds(contract.GraphKinds(g)),
	})
	probe = contract.ProbePolicy(g, "fleetgraph-hub-probe."+g.Instance.Plural+"."+g.Instance.GVK.Group)
	return policy, probe
}

// LiteralClusters are the clusters every instance of g writes to whatever
// its spec, sorted: the hub's own ("", where untargeted resources go) and
// every cluster a literal target names.
func LiteralClusters(g *graph.Graph) []string {
	out := []string{""}
	for _, n := range g.Targets() {
		if t := n.Target(); !t.Computed() && t.SecretName == "" && !slices.Contains(out, t.Name) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// releaseRefused takes the stamped finalizer off a new instance refused
// before the hub wrote anything (it has no status yet), so that a refused
// instance holds nothing, as without the policy: only when every cluster
// it records answers, live, that it holds none of the instance's children.
// On any doubt (a cluster not engaged or not answering, a child found, a
// conflict) the finalizer stays, and the deletion looks there.
func (s *server) releaseRefused(ctx context.Context, inst *unstructured.Unstructured) {
	if !controllerutil.ContainsFinalizer(inst, contract.Finalizer) || inst.GetDeletionTimestamp() != nil {
		return
	}
	if status, _, _ := unstructured.NestedMap(inst.Object, "status"); len(status) > 0 {
		return // reconciled before: it may have children
	}
	for _, name := range recordedClusters(inst) {
		r := s.rt.reach(ctx, name)
		if r.Err != nil {
			return
		}
		for _, gvk := range contract.GraphKinds(s.g) {
			if has, err := s.holdsChildren(ctx, inst, r.Cluster, gvk); err != nil || has {
				return
			}
		}
	}
	_, _ = s.engine.Load().RemoveFinalizer(inst) // on a conflict, the next reconcile looks again
}

// holdsChildren asks cl, live, whether it holds any child of inst of gvk.
func (s *server) holdsChildren(ctx context.Context, inst *unstructured.Unstructured, cl *instance.Cluster, gvk schema.GroupVersionKind) (bool, error) {
	cctx, cancel := s.rt.callCtx(ctx)
	defer cancel()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := cl.GetAPIReader().List(cctx, list, s.engine.Load().ChildrenSelector(inst.GetUID()), client.Limit(1))
	if meta.IsNoMatchError(err) {
		return false, nil // the kind is not served there
	}
	return len(list.Items) > 0, err
}

// Stamp retries.
const (
	// unstampRetry is the first wait before removing a policy again.
	unstampRetry = 500 * time.Millisecond
	// unstampRetryMax caps that wait.
	unstampRetryMax = 30 * time.Second
)

// stamping is one server's side of its policy: whether it went off the
// hub, and when (zero when there was none to remove).
type stamping struct {
	mu   sync.Mutex
	done bool
	off  time.Time
}

// install binds s's policy on the hub, if a Stamp is set.
func (s *server) install(ctx context.Context) {
	if st := s.rt.opts.Stamp; st != nil {
		st.Install(ctx, s.g)
	}
}

// unstamp removes s's policy from the hub, once; it returns when the
// policy went off (the zero time when no Stamp is set: nothing stamps).
func (s *server) unstamp(ctx context.Context) (time.Time, error) {
	s.stamp.mu.Lock()
	defer s.stamp.mu.Unlock()
	if s.stamp.done {
		return s.stamp.off, nil
	}
	if st := s.rt.opts.Stamp; st != nil {
		if err := st.Remove(ctx, s.g); err != nil {
			return time.Time{}, err
		}
		s.stamp.off = time.Now()
	}
	s.stamp.done = true
	return s.stamp.off, nil
}

// unstampLater removes s's policy in the background, retrying with
// backoff until it is off or ctx ends.
func (s *server) unstampLater(ctx context.Context) {
	backoff := wait.Backoff{Duration: unstampRetry, Factor: 2, Steps: 1 << 30, Cap: unstampRetryMax}
	go func() {
		_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			_, err := s.unstamp(ctx)
			if err != nil {
				s.log.Info("removing the hub graph's admission policy; retrying", "error", err.Error())
			}
			return err == nil, nil
		})
	}()
}

// Unstamp takes the named graph's admission policy off the hub (once) and
// returns since when it has been off: the API server may still stamp an
// instance for a moment after, which a removal waits out. It returns the
// zero time when there is nothing to wait for: no Stamp is set, or the
// graph is not served.
func (r *Runtime) Unstamp(ctx context.Context, name string) (time.Time, error) {
	r.mu.Lock()
	s := r.graphs[name]
	r.mu.Unlock()
	if s == nil {
		return time.Time{}, nil
	}
	return s.unstamp(ctx)
}
