package hubgraph

import (
	"context"
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// ClusterUse is how a hub graph's instances use one cluster.
type ClusterUse struct {
	// Cluster is the cluster's name; "" is the hub's own.
	Cluster string
	// Instances is how many instances list the cluster in
	// AnnotationClusters: they may have children there.
	Instances int
	// Ready is how many of those are ACTIVE, and InError how many are in
	// ERROR.
	Ready, InError int
	// Deleting is how many of those are being deleted: what they wrote
	// there has not all gone yet.
	Deleting int
}

// Tally is a hub graph's instances, counted from the hub's cache.
type Tally struct {
	// Instances counts them all, Ready the ACTIVE ones, InError those in
	// ERROR and Deleting those being deleted.
	Instances, Ready, InError, Deleting int
	// Uses is every cluster they may have children in, sorted by name.
	Uses []ClusterUse
}

// Uses returns, for the named graph served here, every cluster its
// instances may have children in, sorted by name, read from the hub's
// cache. It is nil for a graph not served here.
func (r *Runtime) Uses(ctx context.Context, name string) ([]ClusterUse, error) {
	t, err := r.Tally(ctx, name)
	return t.Uses, err
}

// Tally counts the named graph's instances and what they use, from the
// hub's cache; the zero Tally for a graph not served here.
func (r *Runtime) Tally(ctx context.Context, name string) (Tally, error) {
	r.mu.Lock()
	s := r.graphs[name]
	r.mu.Unlock()
	if s == nil {
		return Tally{}, nil
	}
	list, err := s.list(ctx)
	if err != nil {
		return Tally{}, err
	}
	var t Tally
	byCluster := map[string]*ClusterUse{}
	for i := range list.Items {
		t.count(&list.Items[i], byCluster)
	}
	t.Uses = make([]ClusterUse, 0, len(byCluster))
	for _, u := range byCluster {
		t.Uses = append(t.Uses, *u)
	}
	sort.Slice(t.Uses, func(i, j int) bool { return t.Uses[i].Cluster < t.Uses[j].Cluster })
	return t, nil
}

// count adds inst to the tally and to the clusters its annotation lists.
func (t *Tally) count(inst *unstructured.Unstructured, byCluster map[string]*ClusterUse) {
	state, _, _ := unstructured.NestedString(inst.Object, "status", "state")
	active, errored, deleting := state == contract.StateActive, state == contract.StateError, inst.GetDeletionTimestamp() != nil
	t.Instances++
	t.Ready += b2i(active)
	t.InError += b2i(errored)
	t.Deleting += b2i(deleting)
	var clusters []string
	if err := json.Unmarshal([]byte(inst.GetAnnotations()[AnnotationClusters]), &clusters); err != nil {
		return // nothing written anywhere yet
	}
	for _, c := range clusters {
		u := byCluster[c]
		if u == nil {
			u = &ClusterUse{Cluster: c}
			byCluster[c] = u
		}
		u.Instances++
		u.Ready += b2i(active)
		u.InError += b2i(errored)
		u.Deleting += b2i(deleting)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// countsChanged tells Options.Instances.CountsChanged of a change to the graph's
// instances; a no-op without it.
func (s *server) countsChanged() func() {
	tell, name := s.rt.opts.Instances.CountsChanged, s.g.Name
	if tell == nil {
		return func() {}
	}
	return func() { tell(name) }
}
