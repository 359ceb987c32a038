package hub

import (
	"context"
	"sync"
)

// An activation (admission_activate.go) outlives the attempt that started
// it: it waits for the API server to read the kind's schema, then binds the
// policy. A removal, a departure or a placement release that deletes the
// policy meanwhile would see it put back by that activation, and new
// instances would be stamped with a finalizer that nothing releases. So
// activations are tracked per cluster and graph name: removing the policy
// first cancels the one in flight and waits for it, and fences off every
// activation started by an Ensure that began before the removal. An Ensure
// that begins afterwards (the graph registered again) activates as usual.

type fenceKey struct{ cluster, graph string }

// activation is one activateAdmission in flight.
type activation struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// fence orders Ensures, activations and removals of the admission policy.
type fence struct {
	mu      sync.Mutex
	seq     uint64
	removed map[fenceKey]uint64 // the seq of the last removal
	running map[fenceKey]*activation
}

// begin returns the ticket of an Ensure that starts now.
func (fc *fence) begin() uint64 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.seq++
	return fc.seq
}

// start runs activate in a goroutine bound to ctx, after any activation of
// the same graph on the same cluster has ended, unless the policy was
// removed there after the Ensure holding ticket began.
func (fc *fence) start(ctx context.Context, key fenceKey, ticket uint64, activate func(context.Context)) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.removed[key] > ticket {
		return
	}
	prev := fc.running[key]
	if prev != nil {
		prev.cancel() // an older version of the graph, or a repeated Ensure
	}
	actx, cancel := context.WithCancel(ctx)
	act := &activation{cancel: cancel, done: make(chan struct{})}
	if fc.running == nil {
		fc.running = map[fenceKey]*activation{}
	}
	fc.running[key] = act
	go func() {
		defer fc.finish(key, act)
		if prev != nil {
			<-prev.done
		}
		activate(actx)
	}()
}

func (fc *fence) finish(key fenceKey, act *activation) {
	fc.mu.Lock()
	if fc.running[key] == act {
		delete(fc.running, key)
	}
	fc.mu.Unlock()
	act.cancel()
	close(act.done)
}

// stop fences key off every Ensure that began before now and waits for
// the activation in flight there, if any.
func (fc *fence) stop(key fenceKey) {
	fc.mu.Lock()
	fc.seq++
	if fc.removed == nil {
		fc.removed = map[fenceKey]uint64{}
	}
	fc.removed[key] = fc.seq
	act := fc.running[key]
	fc.mu.Unlock()
	if act != nil {
		act.cancel()
		<-act.done
	}
}

// removedSince reports whether the policy was removed at key after the
// Ensure holding ticket began.
func (fc *fence) removedSince(key fenceKey, ticket uint64) bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.removed[key] > ticket
}

// forget drops what the fence knows of a cluster that was disengaged.
func (fc *fence) forget(clusterName string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for key := range fc.removed {
		if key.cluster == clusterName {
			delete(fc.removed, key)
		}
	}
}
