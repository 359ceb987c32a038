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
	// Ready is how many of those are ACTIVE.
	Ready int
}

// Uses returns, for the named graph served here, every cluster its
// instances may have children in, sorted by name, read from the hub's
// cache. It is nil for a graph not served here.
func (r *Runtime) Uses(ctx context.Context, name string) ([]ClusterUse, error) {
	r.mu.Lock()
	s := r.graphs[name]
	r.mu.Unlock()
	if s == nil {
		return nil, nil
	}
	list, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	byCluster := map[string]*ClusterUse{}
	for i := range list.Items {
		countUse(&list.Items[i], byCluster)
	}
	out := make([]ClusterUse, 0, len(byCluster))
	for _, u := range byCluster {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out, nil
}

// countUse adds inst to the clusters its annotation lists.
func countUse(inst *unstructured.Unstructured, byCluster map[string]*ClusterUse) {
	var clusters []string
	if err := json.Unmarshal([]byte(inst.GetAnnotations()[AnnotationClusters]), &clusters); err != nil {
		return // nothing written anywhere yet
	}
	state, _, _ := unstructured.NestedString(inst.Object, "status", "state")
	for _, c := range clusters {
		u := byCluster[c]
		if u == nil {
			u = &ClusterUse{Cluster: c}
			byCluster[c] = u
		}
		u.Instances++
		if state == contract.StateActive {
			u.Ready++
		}
	}
}
