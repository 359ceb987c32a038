package sdk

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// The fleet's state as the hub sees it. The types are defined by the
// public hub package, whose fan-out fills them in, and named here so that
// embedders of the façade reach them from the one package they import.
type (
	// GraphStatus is a graph's state across the fleet, one entry per
	// cluster, sorted by cluster name. Summary condenses it into the
	// bounded form written on the RGD.
	GraphStatus = hub.GraphStatus
	// ClusterStatus is a graph's state on one cluster: the CRD of its
	// latest version, the version serving there and the instance counts.
	ClusterStatus = hub.ClusterStatus
	// TargetStatus is one cluster a hub graph's instances write to.
	TargetStatus = hub.TargetStatus
	// CRDState is where a graph's generated CRD stands on one cluster.
	CRDState = hub.CRDState
	// Reason says why a cluster does not serve the revision it should, or
	// why the revision it should serve is not the graph's latest.
	Reason = hub.Reason
	// ProberOptions configures how often, and how patiently, the hub asks
	// each cluster's /readyz.
	ProberOptions = hub.ProberOptions
	// EngagementReporter is implemented by providers that can say which of
	// their clusters they could not engage, and why; the hub shows those
	// clusters as CRDNotEngaged. Providers need not import this package to
	// implement it: the hub checks with a type assertion.
	EngagementReporter = hub.EngagementReporter
)

// The states a cluster's CRD can be in; ClusterStatus.Message explains any
// but CRDEstablished.
const (
	// CRDPending: fan-out to the cluster has not finished a first attempt.
	CRDPending = hub.CRDPending
	// CRDApplied: the CRD was applied and is not established yet.
	CRDApplied = hub.CRDApplied
	// CRDEstablished: the CRD is established and instances are served.
	CRDEstablished = hub.CRDEstablished
	// CRDConflict: a CRD of that name exists that fleetgraph does not own;
	// it is left untouched.
	CRDConflict = hub.CRDConflict
	// CRDIncompatible: the cluster lacks a kind the graph needs, or the new
	// schema would break the one served there.
	CRDIncompatible = hub.CRDIncompatible
	// CRDError: any other failure; retried with backoff.
	CRDError = hub.CRDError
	// CRDMissing: the CRD the hub established there was deleted by
	// something else; it is applied again, and the instances there are
	// not counted meanwhile.
	CRDMissing = hub.CRDMissing
	// CRDUnreachable: the cluster stopped answering the hub's probe.
	CRDUnreachable = hub.CRDUnreachable
	// CRDNotEngaged: the provider could not engage the cluster.
	CRDNotEngaged = hub.CRDNotEngaged
)

// Why a cluster does not serve the latest revision of a graph
// (ClusterStatus.Reason); ClusterStatus.Why says it for people.
const (
	// ReasonRollingOut: the graph's rollout has not taken the latest
	// revision to the cluster yet, or is moving it there.
	ReasonRollingOut = hub.ReasonRollingOut
	// ReasonHeld: a hold of the graph's rollout pins the cluster.
	ReasonHeld = hub.ReasonHeld
	// ReasonRolledBack: the latest revision was rolled back.
	ReasonRolledBack = hub.ReasonRolledBack
	// ReasonFailed: the cluster failed its wave of the latest revision
	// within the wave's budget and went back.
	ReasonFailed = hub.ReasonFailed
	// ReasonGate: the revision the cluster should serve has not passed its
	// gate there yet.
	ReasonGate = hub.ReasonGate
	// ReasonIncompatible: the cluster cannot take the revision it should
	// serve.
	ReasonIncompatible = hub.ReasonIncompatible
	// ReasonUnreachable: the cluster does not answer, or is not engaged.
	ReasonUnreachable = hub.ReasonUnreachable
	// ReasonReplicaGone: the hub replica that served the cluster stopped
	// and no other has taken it over yet.
	ReasonReplicaGone = hub.ReasonReplicaGone
)

// TrimCache is a cluster.Option for providers that create the clusters the
// hub serves: their caches then keep managedFields' manager names (which
// the ownership-conflict message uses) but not the field sets, which the
// hub never reads. The secret provider applies it to every cluster; an
// embedder's own provider can pass it to cluster.New.
func TrimCache(o *cluster.Options) { cacheopts.TrimCache(o) }

// ReportWatchErrors is a cluster.Option for providers that create the
// clusters the hub serves: the hub then learns when an informer of the
// cluster's cache fails to list or watch a kind (RBAC revoked, kind gone,
// spoke unreachable), counts it in fleetgraph_spoke_watch_errors_total and
// fleetgraph_spoke_watches_failing, and shows it on the affected instances
// as a ResourcesWatched=False condition until the watch works again. The
// secret and kcp providers apply it to every cluster; without it nothing
// breaks, but such failures are only logged.
func ReportWatchErrors(o *cluster.Options) { cacheopts.ReportWatchErrors(o) }

// expected is the fan-out's Expect (hub.Options.Expect): the engaged
// clusters the named graph is placed on, each with why the revision the
// runtime offers waits there (a rollout wave, the rollouts not read yet),
// so that a new graph's FleetStatus lists every one of them at once,
// Pending until its first fan-out finishes. A graph not registered has
// none.
func (c *crdFanOut) expected(graphName string) (int64, map[string]string) {
	h := c.h
	reg := h.lookup(graphName)
	if reg == nil {
		return 0, nil
	}
	if reg.graph.IsHubGraph() {
		return reg.graph.Generation, nil // served on the hub, on no spoke (hubgraphs.go)
	}
	v := h.runtime.Latest(graphName)
	if v.Graph == nil {
		v = spoke.Version{Graph: reg.graph, Revision: reg.revision}
	}
	decided, placed := h.planner.DecideEngaged(graphName, v.Revision)
	out := make(map[string]string, len(placed))
	for name := range placed {
		if h.pull.is(name) {
			continue // not the fan-out's: pull.go lists it
		}
		if why := decided[name]; why != "" {
			out[name] = fmt.Sprintf("revision %d waits: %s", v.Revision, why)
		} else {
			out[name] = ""
		}
	}
	return v.Graph.Generation, out
}
