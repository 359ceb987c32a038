package spoke

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/fair"
	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// sync reconciles a live instance: its bookkeeping (finalizer and child
// kinds), its children in DAG order, prune, status; each step is the
// engine's, every child in the instance's own cluster. An evaluation or
// apply failure is written to status and returned, so the request is
// retried with backoff; so is a cluster that did not answer. On success
// the instance's next resync is scheduled, and while a child is being
// deleted sync asks to run again after Config.DeletionPoll.
func (r reconciler) sync(inst *unstructured.Unstructured) (time.Duration, error) {
	m, e := r.m, r.m.engine
	key := keyOf(inst)
	inst, err := e.Bookkeep(inst, nil)
	if err != nil {
		return 0, err
	}
	full := e.ResyncDue(key)
	o := e.Evaluate(inst, m.valuesOf(inst), e.HomePlacement(), full)
	pruneErr := e.Prune(inst, o, e.HomeReach())
	st, err := e.WriteStatus(inst, o, pruneErr)
	m.states.set(key, st.State)
	if err != nil {
		return 0, err
	}
	if err := failure(o, pruneErr); err != nil {
		return 0, err
	}
	if next := e.ScheduleResync(key, full); next > 0 {
		m.enqueueAfter(key, next)
	}
	if o.Deleting() {
		return m.c.opts.DeletionPoll, nil
	}
	return 0, nil
}

// values are what the graph's expressions read besides its resources:
// the instance, and the cluster it lives in (cluster_values.go).
func (m *member) valuesOf(inst *unstructured.Unstructured) graph.Values {
	vals := graph.Values{"schema": inst.Object}
	m.bindCluster(vals)
	return vals
}

// failure is the reconcile's error for an outcome that must be retried:
// a failure (one stopped by a limit is paced, limitFailure), a prune
// error, a cluster that did not answer.
func failure(o *instance.Outcome, pruneErr error) error {
	if reason, message, failed := o.Failure(); failed {
		if reason == instance.ReasonLimitExceeded {
			return &limitFailure{message}
		}
		return errors.New(message)
	}
	if pruneErr != nil {
		return pruneErr
	}
	if o.Unreachable() {
		return errUnreachable
	}
	return nil
}

// errUnreachable: the instance's cluster did not answer a call the
// reconcile made; it is retried with backoff.
var errUnreachable = errors.New("spoke: the cluster did not answer")

// limitFailure is a reconcile's error when one of the graph's limits
// stopped its evaluation: its message is the instance's, and it is
// fair.ErrStoppedByLimit, so that its retry waits longer.
type limitFailure struct{ message string }

func (e *limitFailure) Error() string        { return e.message }
func (e *limitFailure) Is(target error) bool { return target == fair.ErrStoppedByLimit }
