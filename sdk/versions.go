package sdk

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/revisions"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// versions keeps the GraphRevision records of the served specs, through
// the store the registry holds (registry.revisions, under its lock, which
// the rollout hooks read too), and is the spoke runtime's fallback. A
// registration the store failed to number is numbered later (numbering.go).
type versions struct {
	h         *Hub
	numbering numbering
}

// setup keeps GraphRevision records on the hub cluster, for RGD
// objects and Go graphs alike, and lets the runtime serve the revision a
// cluster served before on a cluster the latest one cannot take yet.
func (v *versions) setup(local manager.Manager) error {
	h := v.h
	c, err := client.New(local.GetConfig(), client.Options{})
	if err != nil {
		return fmt.Errorf("client for the hub: %w", err)
	}
	revs := revisions.New(c, h.opts.Instances.FieldManager)
	h.setRevisionStore(revs)
	h.runtime.SetFallback(v.previous)
	// The GraphRevision CRD goes on the hub as the manager starts, not with
	// the first graph, which would wait seconds for it to be established.
	// A failure is retried by the first Issue.
	return local.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := revs.Install(ctx); err != nil && ctx.Err() == nil {
			h.opts.Logger.Info("GraphRevision CRD not installed yet; the first graph tries again", "reason", err.Error())
		}
		v.numberUnnumbered() // graphs registered before the store was set (numbering.go)
		return nil
	}))
}

// record returns the revision the hub records for rgd's spec, and the
// store's error when it could not record one. Without a record (the Hub is
// not set up yet, or the hub cluster refuses) it is 0: the graph is served
// unnumbered, a restart cannot find it again, and a GraphRollout holds it
// back (internal/rollout/unnumbered.go) until recordLater numbers it.
func (v *versions) record(ctx context.Context, rgd *v1alpha1.ResourceGraphDefinition) (int64, error) {
	h := v.h
	revs := h.revisionStore()
	if revs == nil {
		return 0, nil
	}
	rev, err := revs.Issue(ctx, rgd)
	if err != nil {
		h.opts.Logger.Error(err, "graph served without a revision record; retrying", "graph", rgd.Name)
		return 0, err
	}
	return rev, nil
}

// previous is the runtime's fallback: it reads which revision the
// cluster's CRD was applied from and compiles that revision's record. A
// cluster whose rollout refuses that revision there (it failed it, was
// rolled back or is held) goes back to the revision the rollout names
// instead, whatever revision the runtime offers.
func (v *versions) previous(ctx context.Context, name multicluster.ClusterName, latest spoke.Version) (spoke.Version, error) {
	h := v.h
	e, revs := h.cluster(string(name)), h.revisionStore()
	g := latest.Graph
	if e == nil || revs == nil || !h.rollouts.placedForFallback(name, g.Name) {
		return spoke.Version{}, nil
	}
	rev, err := revisions.ServedRevision(ctx, e.cl.GetAPIReader(), g.CRD.Name)
	if err == nil {
		// A cluster that failed the revision its CRD names (or was rolled
		// back or held off it) goes back to the revision its rollout names.
		rev = h.planner.FallBackFrom(g.Name, string(name), rev)
	}
	if err != nil || rev == 0 || rev == latest.Revision {
		return spoke.Version{}, err
	}
	rec, err := revs.Get(ctx, g.Name, rev)
	if err != nil {
		return spoke.Version{}, err
	}
	old, err := graph.CompileContext(ctx, revisions.RGD(rec), h.compileOptions())
	if err != nil {
		return spoke.Version{}, fmt.Errorf("compiling revision %d of graph %s: %w", rev, g.Name, err)
	}
	return spoke.Version{Graph: old, Revision: rev}, nil
}
