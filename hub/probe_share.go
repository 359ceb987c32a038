package hub

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Clusters behind one API server and identity (server_key.go) get one
// answer from it: a thousand simulated clusters on one server would
// otherwise ask its /readyz a thousand times per interval, with as many
// goroutines waiting. A cluster whose probe is due takes the answer of a
// probe of its server that started less than probeShareWindow before, or
// waits for the one in flight; else it asks itself.

// probeShareWindow is how old an answer of the same server a cluster takes
// instead of asking again. It adds to the time a dead server's clusters
// take to turn Unreachable.
const probeShareWindow = time.Second

// sharedProbes holds the latest probe of each server. The zero value is
// ready to use.
type sharedProbes struct {
	mu     sync.Mutex
	latest map[string]*sharedProbe
	// window defaults to probeShareWindow; tests widen it.
	window time.Duration
}

// sharedProbe is one probe of a server; its flight ends with the answer.
type sharedProbe struct {
	started time.Time
	answer  *flight
}

// probe asks cl's server through ask, or takes a recent or pending answer
// of the same server.
func (s *sharedProbes) probe(ctx context.Context, cl cluster.Cluster, ask func() error) error {
	key, ok := serverKey(cl.GetConfig())
	if !ok {
		return ask()
	}
	window := s.window
	if window == 0 {
		window = probeShareWindow
	}
	s.mu.Lock()
	p := s.latest[key]
	if p != nil && time.Since(p.started) < window {
		s.mu.Unlock()
		select {
		case <-p.answer.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.answer.abandoned {
			return ask() // its cluster left before the answer came
		}
		return p.answer.err
	}
	if s.latest == nil || len(s.latest) >= maxSharedChecks {
		s.latest = map[string]*sharedProbe{}
	}
	p = &sharedProbe{started: time.Now(), answer: &flight{done: make(chan struct{})}}
	s.latest[key] = p
	s.mu.Unlock()
	err := ask()
	p.answer.err, p.answer.abandoned = err, ctx.Err() != nil
	close(p.answer.done)
	return err
}
