package testing

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// FleetOptions configures a local fleet.
type FleetOptions struct {
	// Spokes is how many spoke clusters to start besides the hub. Defaults
	// to 0.
	Spokes int
	// Cluster configures every cluster of the fleet. Its zero value is
	// usable; see ClusterOptions.
	Cluster ClusterOptions
}

// Fleet is a hub and a set of spokes, each a real API server on loopback.
// Its methods are safe for concurrent use.
type Fleet struct {
	// Hub is the hub cluster, named "hub".
	Hub *Cluster

	opts   FleetOptions
	mu     sync.Mutex
	spokes []*Cluster
	next   int
}

// NewFleet starts a hub and opts.Spokes spokes in parallel. On error every
// cluster it started is stopped again. Call Stop when done; in tests prefer
// StartFleet, which does that on cleanup.
func NewFleet(opts FleetOptions) (*Fleet, error) {
	f := &Fleet{opts: opts}
	names := []string{"hub"}
	for range opts.Spokes {
		names = append(names, f.nextSpokeName())
	}
	started, err := startClusters(names, opts.Cluster)
	if err != nil {
		return nil, err
	}
	f.Hub, f.spokes = started[0], started[1:]
	return f, nil
}

// StartFleet starts a fleet with the given number of spokes and stops it on
// t.Cleanup. It fails the test, with a message saying how to build the
// binaries, if they are missing; it never skips.
func StartFleet(t TestingT, spokes int, opts ...FleetOptions) *Fleet {
	t.Helper()
	o := FleetOptions{}
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Spokes = spokes
	f, err := NewFleet(o)
	if err != nil {
		t.Fatalf("starting a fleet of 1 hub and %d spokes: %v", spokes, err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Logf("stopping fleet: %v", err)
		}
	})
	return f
}

// Spokes returns the running spokes in the order they were started.
func (f *Fleet) Spokes() []*Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Cluster(nil), f.spokes...)
}

// Spoke returns the running spoke with the given name, or nil.
func (f *Fleet) Spoke(name string) *Cluster {
	for _, s := range f.Spokes() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// AddSpoke starts one more spoke ("spoke-N", numbered on from the last) and
// returns it. It does not add it to any Provider: do that with AddConfig.
func (f *Fleet) AddSpoke() (*Cluster, error) {
	f.mu.Lock()
	name := f.nextSpokeName()
	f.mu.Unlock()
	c, err := StartCluster(name, f.opts.Cluster)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.spokes = append(f.spokes, c)
	f.mu.Unlock()
	return c, nil
}

// StopSpoke stops the named spoke's API server, as if the cluster died. Any
// Provider that holds it keeps it until it is removed there.
func (f *Fleet) StopSpoke(name string) error {
	f.mu.Lock()
	var found *Cluster
	for i, s := range f.spokes {
		if s.Name == name {
			found = s
			f.spokes = append(f.spokes[:i], f.spokes[i+1:]...)
			break
		}
	}
	f.mu.Unlock()
	if found == nil {
		return fmt.Errorf("no spoke named %q", name)
	}
	return found.Stop()
}

// NewProvider returns a Provider that holds every running spoke under its
// name. clusterOpts apply to each cluster it creates.
func (f *Fleet) NewProvider(ctx context.Context, clusterOpts ...cluster.Option) (*Provider, error) {
	p := NewProvider(clusterOpts...)
	for _, s := range f.Spokes() {
		if err := p.AddConfig(ctx, s.Name, s.Config); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Stop stops every cluster of the fleet.
func (f *Fleet) Stop() error {
	all := append([]*Cluster{f.Hub}, f.Spokes()...)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Go(func() { errs[i] = c.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (f *Fleet) nextSpokeName() string {
	f.next++
	return fmt.Sprintf("spoke-%d", f.next)
}

// startClusters starts the named clusters in parallel; if any fails, the
// others are stopped and the errors are joined.
func startClusters(names []string, opts ClusterOptions) ([]*Cluster, error) {
	out := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { out[i], errs[i] = StartCluster(name, opts) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range out {
			if c != nil {
				_ = c.Stop()
			}
		}
		return nil, err
	}
	return out, nil
}
