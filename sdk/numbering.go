package sdk

import (
	"context"
	"sync"
	"time"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/spoke"
)

// A registration whose revision the store could not record is served
// unnumbered, and a GraphRollout holds an unnumbered spec back from every
// cluster it has not opened to a new revision (internal/rollout/
// unnumbered.go). So the hub keeps trying to record it, with a backoff
// (revisionRetry doubling up to revisionRetryMax, each attempt within
// revisionAttemptTimeout), until it is numbered, the registration is
// replaced or removed, or the hub stops. The first failure is a Warning
// event on the RGD (RevisionNotRecorded), every failure a log line, and
// the success a Normal event (RevisionRecorded): then the runtime offers
// the numbered version, which goes through the rollout like any other.

const (
	revisionRetry          = time.Second
	revisionRetryMax       = 30 * time.Second
	revisionAttemptTimeout = time.Minute
)

// numbering is the registrations whose revision recordLater is recording.
type numbering struct {
	mu      sync.Mutex
	pending map[*registration]bool
}

// start reports whether reg had no recording under way, and marks it.
func (n *numbering) start(reg *registration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pending[reg] {
		return false
	}
	if n.pending == nil {
		n.pending = map[*registration]bool{}
	}
	n.pending[reg] = true
	return true
}

func (n *numbering) done(reg *registration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pending, reg)
}

// recordLater records reg's revision in the background (rgd is what it was
// registered from), after the store refused with first.
func (v *versions) recordLater(rgd *v1alpha1.ResourceGraphDefinition, reg *registration, first error) {
	h := v.h
	if !v.numbering.start(reg) {
		return
	}
	if target, rec := h.eventTarget(rgd.Name); target != nil && rec != nil && first != nil {
		rec.Eventf(target, nil, "Warning", "RevisionNotRecorded", "RecordRevision",
			"graph %s is served unnumbered, held back by its rollout if it has one, until its revision is recorded: %s",
			rgd.Name, boundReason(first.Error()))
	}
	rgd = rgd.DeepCopy()
	go func() {
		defer v.numbering.done(reg)
		for delay := revisionRetry; ; delay = min(2*delay, revisionRetryMax) {
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(delay):
			}
			if h.lookup(rgd.Name) != reg {
				return // replaced or removed: its successor records its own
			}
			ctx, cancel := context.WithTimeout(h.ctx, revisionAttemptTimeout)
			rev, err := h.revisionStore().Issue(ctx, rgd)
			cancel()
			if err == nil {
				v.numbered(reg, rev)
				return
			}
			if h.ctx.Err() != nil {
				return
			}
			h.opts.Logger.Info("recording the revision of a graph served unnumbered failed; retrying",
				"graph", rgd.Name, "retry", min(2*delay, revisionRetryMax), "reason", err.Error())
		}
	}()
}

// numbered registers reg again as revision rev, if it is still the
// registration served under its name, and has the runtime offer it
// numbered, unless a rollback made it offer another revision (the rollout
// offers the latest again when the rollback ends).
func (v *versions) numbered(reg *registration, rev int64) {
	h := v.h
	name := reg.graph.Name
	defer h.registrar.names.lock(name)()
	h.mu.Lock()
	current := h.graphs[name] == reg
	if current {
		// A new registration, not a write to reg: others read a
		// registration's fields after they let go of the lock.
		numbered := *reg
		numbered.revision = rev
		h.graphs[name] = &numbered
	}
	h.mu.Unlock()
	if !current {
		return
	}
	h.opts.Logger.Info("revision recorded for a graph served unnumbered", "graph", name, "revision", rev)
	if target, rec := h.eventTarget(name); target != nil && rec != nil {
		rec.Eventf(target, nil, "Normal", "RevisionRecorded", "RecordRevision",
			"graph %s is revision %d: it goes through its rollout from now on", name, rev)
	}
	if reg.graph.IsHubGraph() {
		return
	}
	if latest := h.runtime.Latest(name); latest.Graph != reg.graph || latest.Revision != 0 {
		return
	}
	if err := h.runtime.Serve(spoke.Version{Graph: reg.graph, Revision: rev}); err != nil {
		h.opts.Logger.Error(err, "serving the numbered revision", "graph", name, "revision", rev)
		return
	}
	h.fanOut.Publish(h.hubGraph(reg.graph, rev))
}

// numberUnnumbered records, once the store is set, the revision of every
// graph registered before it was (served unnumbered).
func (v *versions) numberUnnumbered() {
	h := v.h
	h.mu.Lock()
	var regs []*registration
	for _, reg := range h.graphs {
		if reg.revision == 0 {
			regs = append(regs, reg)
		}
	}
	h.mu.Unlock()
	for _, reg := range regs {
		v.recordLater(registeredRGD(reg), reg, nil)
	}
}

// registeredRGD is the RGD reg was registered from, as the store records
// it: name, generation, opt-in, spec and (for an RGD object) its UID.
func registeredRGD(reg *registration) *v1alpha1.ResourceGraphDefinition {
	rgd := &v1alpha1.ResourceGraphDefinition{}
	if reg.rgd != nil {
		rgd.ObjectMeta = *reg.rgd.ObjectMeta.DeepCopy()
	}
	rgd.Name, rgd.Generation = reg.graph.Name, reg.graph.Generation
	rgd.Spec = *reg.spec.DeepCopy()
	if reg.allowBreaking {
		if rgd.Annotations == nil {
			rgd.Annotations = map[string]string{}
		}
		rgd.Annotations[v1alpha1.AnnotationAllowBreakingChanges] = "true"
	}
	return rgd
}

// maxReason bounds a store error quoted in an event.
const maxReason = 512

func boundReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return s[:maxReason] + "..."
}
