package rollout

import (
	"errors"
	"fmt"
)

// A graph is served unnumbered (revision 0) when the hub could not record
// its revision: the revision store failed as the graph was registered (a
// GraphRevision CRD it cannot install or read on a loaded or restarting
// hub, say). Without a number the Controller can neither roll the spec out
// nor judge it, nor roll back to it, so where a GraphRollout governs the
// graph, an unnumbered spec must not slip past it:
//
//   - a cluster a hold pins, one being rolled back (spec.rollbackTo, or
//     onFailure: Rollback going back), and every cluster when the rollout
//     refuses later revisions, take no unnumbered spec;
//   - elsewhere, only where the plan would let any new revision go now (the
//     first wave, when it needs no approval and moves its clusters all at
//     once; or everywhere placed before the rollout has a target) may it
//     go, and there only to a cluster that serves no numbered revision of
//     the graph: ErrUnnumbered says so, and the hub's gate checks what the
//     cluster serves. A cluster on a numbered revision keeps it (through
//     the hub's fallback after a restart): a canary that failed the target
//     and the clusters of waves not reached stay where the rollout put
//     them.
//
// The hub keeps trying to record the revision; once it has a number the
// spec goes through the rollout like any other. Without a GraphRollout
// for the graph, an unnumbered spec is only placed, as before.

// ErrUnnumbered: the revision has no number and a rollout governs the
// graph; it may be served on the cluster only if the cluster serves no
// numbered revision of the graph. Any other decision on an unnumbered
// revision under a rollout is ErrHeldBack.
var ErrUnnumbered = errors.New("the revision is unnumbered: it may only reach a cluster that serves no numbered revision")

// decideUnnumbered is the decision for an unnumbered revision of the graph
// on the named cluster, in wave wave of p (nil: no rollout).
func (p *plan) decideUnnumbered(cluster string, wave int32) error {
	if p == nil {
		return nil
	}
	if err, held := p.decideHeld(cluster, 0); held {
		return err
	}
	if p.spec.RollbackTo > 0 || p.back > 0 {
		return fmt.Errorf("%w: an unnumbered revision does not reach a cluster being rolled back", ErrHeldBack)
	}
	// Would a revision the controller has not seen yet go there now?
	if p.decideOn(cluster, p.target+1, wave) != nil {
		return fmt.Errorf("%w: an unnumbered revision waits for its number: no new revision may reach wave %q now",
			ErrHeldBack, waveName(p.spec, wave))
	}
	return fmt.Errorf("%w (wave %q)", ErrUnnumbered, waveName(p.spec, wave))
}
