package sdk

import (
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/clustervalues"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// clusterValues are the values the platform gives graphs per cluster, from
// the hub's fleetgraph.dev ClusterValues objects, which graphs read as
// cluster.values (see fgv1alpha1.ClusterValues for the merge rule). The
// Hub keeps them current with a watch of its own, and tells the spoke
// runtime at each change; the runtime reconciles again only the instances
// of graphs whose values changed, on the clusters where they did.
type clusterValues struct {
	store clustervalues.Store
	// ctrl watches the objects; nil when Options.DisableClusterValues is
	// set, or before SetupWithManager.
	ctrl *clustervalues.Controller
}

// clusterValuesFor is the spoke runtime's Options.ClusterValues: the
// values the named graph reads on the named cluster, by the labels the
// provider gives the cluster now (those placement uses).
func (h *Hub) clusterValuesFor(name multicluster.ClusterName, graphName string) map[string]any {
	return h.values.store.Values(graphName, h.clusterLabels(name))
}

// errValuesNotRead: the gate of a graph that reads cluster.values waits
// until the hub has read the ClusterValues objects once, so that no
// instance is reconciled without its values right after a start.
var errValuesNotRead = errors.New("the hub has not read the ClusterValues objects yet")

// valuesGate holds back a graph that reads cluster.values until the
// ClusterValues objects were read once.
func (h *Hub) valuesGate(v spoke.Version) error {
	ctrl := h.values.ctrl
	if ctrl == nil || v.Graph.UsesCluster()&graph.ClusterValues == 0 {
		return nil
	}
	select {
	case <-ctrl.Synced():
		return nil
	default:
		return errValuesNotRead
	}
}

// setupClusterValues adds, unless Options.DisableClusterValues, the
// controller that installs the ClusterValues CRD on the hub and watches
// the objects (on every replica), and its leader-elected status writer.
func (h *Hub) setupClusterValues(local manager.Manager) error {
	if h.opts.DisableClusterValues {
		return nil
	}
	h.values.ctrl = clustervalues.New(clustervalues.Options{
		Config:       local.GetConfig(),
		Store:        &h.values.store,
		Notify:       func() { h.runtime.ClusterValuesChanged() },
		Clusters:     h.engagedLabels,
		FieldManager: h.opts.FieldManager,
		Resync:       h.opts.StatusResync,
		Logger:       h.opts.Logger.WithName("clustervalues"),
	})
	if err := local.Add(h.values.ctrl); err != nil {
		return fmt.Errorf("adding the ClusterValues controller: %w", err)
	}
	if err := local.Add(h.values.ctrl.StatusWriter()); err != nil {
		return fmt.Errorf("adding the ClusterValues status writer: %w", err)
	}
	return nil
}

// engagedLabels returns the labels of every engaged cluster, by name.
func (h *Hub) engagedLabels() map[string]map[string]string {
	h.mu.Lock()
	names := make([]string, 0, len(h.clusters))
	for name := range h.clusters {
		names = append(names, name)
	}
	h.mu.Unlock()
	out := make(map[string]map[string]string, len(names))
	for _, name := range names {
		out[name] = h.clusterLabels(multicluster.ClusterName(name))
	}
	return out
}
