package hubgraph

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// fleetPoll is how often a graph that reads the fleet variable looks for
// a cluster that joined, left or was relabelled.
const fleetPoll = 2 * time.Second

// fleet is the fleet variable's value now.
func (s *server) fleet() map[string]any {
	names := s.rt.opts.Clusters.Names()
	clusters := make([]graph.FleetCluster, 0, len(names))
	for _, n := range names {
		clusters = append(clusters, graph.FleetCluster{Name: n, Labels: s.rt.opts.Clusters.Labels(n)})
	}
	return graph.FleetValue(clusters)
}

// watchFleet requeues every instance of the graph when the fleet changes,
// until ctx ends.
func (s *server) watchFleet(ctx context.Context) {
	last, _ := json.Marshal(s.fleet())
	t := time.NewTicker(fleetPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, _ := json.Marshal(s.fleet())
		if string(now) == string(last) {
			continue
		}
		last = now
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(s.g.Instance.GVK.GroupVersion().WithKind(s.g.Instance.GVK.Kind + "List"))
		if err := s.rt.hub().GetCache().List(ctx, list); err != nil {
			s.log.Info("listing instances after a fleet change", "error", err.Error())
			continue
		}
		for i := range list.Items {
			s.enqueue(types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()})
		}
	}
}
