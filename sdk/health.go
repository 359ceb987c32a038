package sdk

import (
	"fmt"

	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/hub"
)

// addProber probes every engaged spoke, so that one that stops answering
// turns Unreachable in FleetStatus (see Options.Fleet.Probe). In single-cluster
// mode the hub is its only spoke: if it stops answering, so does the hub.
func (c *crdFanOut) addProber(mgr mcmanager.Manager) error {
	h := c.h
	if h.provider == nil {
		return nil
	}
	probe := h.opts.Fleet.Probe
	if probe.Logger.GetSink() == nil {
		probe.Logger = h.opts.Logger.WithName("prober")
	}
	if err := mgr.Add(hub.NewProber(c.fanOut, probe)); err != nil {
		return fmt.Errorf("adding cluster prober: %w", err)
	}
	return nil
}
