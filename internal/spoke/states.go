package spoke

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// instanceStates is the state (status.state) each instance a member
// reconciled last got: the fleetgraph_spoke_instances gauge counts them,
// a change of the cluster's watch health requeues them, and the slots ask
// whether they span more than one namespace (package fair).
type instanceStates struct {
	graph, cluster string
	// ctx is the member's: once it ended, the gauge is left to the
	// member's clean-up, which drops the cluster's series.
	ctx context.Context

	mu     sync.Mutex
	states map[types.NamespacedName]string
	// perNamespace counts states by namespace (made on first use); spans
	// is set while it holds more than one namespace. The controller reads
	// spans under its own lock, which must never wait for mu.
	perNamespace map[string]int
	spans        atomic.Bool
}

func newInstanceStates(ctx context.Context, graphName, cluster string) *instanceStates {
	return &instanceStates{graph: graphName, cluster: cluster, ctx: ctx, states: map[types.NamespacedName]string{}}
}

// set records an instance's state for the instances gauge. An empty state
// forgets the instance.
func (s *instanceStates) set(key types.NamespacedName, state string) {
	s.mu.Lock()
	old, had := s.states[key]
	if state == "" {
		delete(s.states, key)
	} else {
		s.states[key] = state
	}
	s.countNamespaceLocked(key.Namespace, had, state != "")
	s.mu.Unlock()
	if old == state || s.ctx.Err() != nil {
		return
	}
	if had {
		instancesByState.WithLabelValues(s.graph, s.cluster, old).Dec()
	}
	if state != "" {
		instancesByState.WithLabelValues(s.graph, s.cluster, state).Inc()
	}
}

// countNamespaceLocked keeps perNamespace and spans when an instance of
// ns is first recorded (had false, has true) or forgotten.
func (s *instanceStates) countNamespaceLocked(ns string, had, has bool) {
	switch {
	case !had && has:
		if s.perNamespace == nil {
			s.perNamespace = map[string]int{}
		}
		s.perNamespace[ns]++
	case had && !has:
		if s.perNamespace[ns]--; s.perNamespace[ns] <= 0 {
			delete(s.perNamespace, ns)
		}
	default:
		return
	}
	s.spans.Store(len(s.perNamespace) > 1)
}

// spansNamespaces reports whether the cluster has instances of the graph
// in more than one namespace (cluster-scoped ones counting as one).
func (s *instanceStates) spansNamespaces() bool { return s.spans.Load() }

// active returns how many instances this member last reconciled to
// ACTIVE. Members serve one version each, so these are the instances that
// version has confirmed, whatever state an earlier one wrote.
func (s *instanceStates) active() int { return s.inState(contract.StateActive) }

// errored returns how many instances this member last reconciled to
// ERROR: like active, whatever an earlier version wrote.
func (s *instanceStates) errored() int { return s.inState(contract.StateError) }

// reconciled returns how many instances this member has reconciled, in
// whatever state it left them.
func (s *instanceStates) reconciled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.states)
}

func (s *instanceStates) inState(want string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, state := range s.states {
		if state == want {
			n++
		}
	}
	return n
}

// snapshot returns a copy of every instance's state.
func (s *instanceStates) snapshot() map[types.NamespacedName]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.states)
}

// keys returns the instances with a state.
func (s *instanceStates) keys() []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(s.states))
	for k := range s.states {
		out = append(out, k)
	}
	return out
}
