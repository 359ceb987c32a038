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
	h     *Hub
	store clustervalues.Store
	// ctrl watches the objects; nil when Options.Fleet.DisableClusterValues is
	// set, or before SetupWithManager.
	ctrl *clustervalues.Controller
}

// forCluster is the spoke runtime's Options.ClusterValues: the values the
// named graph reads on the named cluster, by the labels the provider gives
// the cluster now (those placement uses).
func (c *clusterValues) forCluster(name multicluster.ClusterName, graphName string) map[string]any {
	return c.store.Values(graphName, c.h.clusterSource.labels(name))
}

// changed makes the controller look at the statuses again soon (a cluster
// was relabelled).
func (c *clusterValues) changed() {
	if c.ctrl != nil {
		c.ctrl.Changed()
	}
}

// errValuesNotRead: the gate of a graph that reads cluster.values waits
// until the hub has read the ClusterValues objects once, so that no
// instance is reconciled without its values right after a start.
var errValuesNotRead = errors.New("the hub has not read the ClusterValues objects yet")

// gate holds back a graph that reads cluster.values until the
// ClusterValues objects were read once.
func (c *clusterValues) gate(v spoke.Version) error {
	ctrl := c.ctrl
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

// setup adds, unless Options.Fleet.DisableClusterValues, the controller that
// installs the ClusterValues CRD on the hub and watches the objects (on
// every replica), and its leader-elected status writer.
func (c *clusterValues) setup(local manager.Manager) error {
	h := c.h
	if h.opts.Fleet.DisableClusterValues {
		return nil
	}
	c.ctrl = clustervalues.New(clustervalues.Options{
		Config:       local.GetConfig(),
		Store:        &c.store,
		Notify:       func() { h.runtime.ClusterValuesChanged(); h.pull.poke() },
		Clusters:     c.engagedLabels,
		FieldManager: h.opts.Instances.FieldManager,
		Resync:       h.opts.Fleet.StatusResync,
		Logger:       h.opts.Logger.WithName("clustervalues"),
	})
	if err := local.Add(c.ctrl); err != nil {
		return fmt.Errorf("adding the ClusterValues controller: %w", err)
	}
	if err := local.Add(c.ctrl.StatusWriter()); err != nil {
		return fmt.Errorf("adding the ClusterValues status writer: %w", err)
	}
	return nil
}

// engagedLabels returns the labels of every engaged cluster, by name.
func (c *clusterValues) engagedLabels() map[string]map[string]string {
	names := c.h.clusterNames()
	out := make(map[string]map[string]string, len(names))
	for _, name := range names {
		out[name] = c.h.clusterSource.labels(multicluster.ClusterName(name))
	}
	return out
}
