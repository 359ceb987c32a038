package hub

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/reach"
)

const (
	// DefaultProbeInterval is how often each engaged cluster is probed.
	DefaultProbeInterval = 5 * time.Second
	// DefaultProbeTimeout bounds one probe.
	DefaultProbeTimeout = 5 * time.Second
	// DefaultProbePath is what a probe asks, unless the FanOut has a
	// Publisher: then "/apis" (a kcp APIExport's virtual workspace serves
	// discovery but no /readyz per consumer).
	DefaultProbePath = "/readyz"
)

var (
	_ multicluster.Aware = &Prober{}
	_ manager.Runnable   = &Prober{}
)

// ProberOptions configures a Prober. The zero value is usable: every field
// says its default.
type ProberOptions struct {
	// Interval is the time between the start of two probes of one cluster.
	// A cluster that stops answering is reported Unreachable at most
	// Interval+Timeout after its last good answer. Defaults to
	// DefaultProbeInterval.
	Interval time.Duration
	// Timeout bounds one probe. Defaults to DefaultProbeTimeout.
	Timeout time.Duration
	// Path is the URL path asked below each cluster's host; any answer but
	// 200 counts as not ready. Defaults to DefaultProbePath, or "/apis"
	// when the FanOut has a Publisher.
	Path string
	// Logger defaults to controller-runtime's log.Log named "prober".
	Logger logr.Logger
}

func (o ProberOptions) withDefaults(f *FanOut) ProberOptions {
	if o.Interval <= 0 {
		o.Interval = DefaultProbeInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultProbeTimeout
	}
	if o.Path == "" {
		o.Path = DefaultProbePath
		if f.opts.Publisher != nil {
			o.Path = "/apis"
		}
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("prober")
	}
	return o
}

// Prober asks every engaged cluster's API server, on a fixed interval and
// with a timeout, whether it is ready (GET /readyz), and records the answer
// in its FanOut's status: a cluster that does not answer in time, or
// answers anything but 200, is CRDUnreachable in every graph's status until
// it answers again (its last known state is kept and shown then). One probe
// per cluster is in flight at a time, so a dead cluster costs one goroutine
// (while its probe waits) and no other cluster waits for it; between
// probes a cluster costs a timer. Clusters behind one API server and
// identity share its answers (probe_share.go): for them the bound above
// grows by one second.
//
// Add it to the multicluster manager, beside its FanOut (it is a
// multicluster.Aware and a manager.Runnable); probing a cluster stops when
// its engagement ends.
type Prober struct {
	opts    ProberOptions
	tracker *tracker
	shared  sharedProbes // probe_share.go
}

// NewProber returns a Prober that records into f's status.
func NewProber(f *FanOut, opts ProberOptions) *Prober {
	return &Prober{opts: opts.withDefaults(f), tracker: f.tracker}
}

// Start implements manager.Runnable; probing runs per engagement.
func (p *Prober) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Engage starts probing cl until ctx ends. It returns at once.
func (p *Prober) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	c := &probedCluster{p: p, ctx: ctx, name: string(name), cl: cl}
	c.mu.Lock() // the first probe may start before the timer is kept
	c.timer = time.AfterFunc(0, c.probe)
	c.mu.Unlock()
	context.AfterFunc(ctx, c.stop)
	return nil
}

// probedCluster is one engagement's probing. Between two probes it is a
// timer and no goroutine: an idle fleet of ten thousand clusters costs ten
// thousand timers, not as many parked goroutines and their stacks. The
// timer is armed again only when a probe has ended, so one probe per
// cluster is in flight at a time.
type probedCluster struct {
	p    *Prober
	ctx  context.Context
	name string
	cl   cluster.Cluster

	mu    sync.Mutex
	timer *time.Timer
}

// probe asks once, records the answer and arms the next probe Interval
// after this one started (at once if this one took longer).
func (c *probedCluster) probe() {
	if c.ctx.Err() != nil {
		return
	}
	p, start := c.p, time.Now()
	err := p.shared.probe(c.ctx, c.cl, func() error { return reach.Probe(c.ctx, c.cl, p.opts.Path, p.opts.Timeout) })
	if c.ctx.Err() != nil {
		return
	}
	if p.tracker.setReachable(c.ctx, c.name, err) {
		p.opts.Logger.Info("cluster reachability changed", "cluster", c.name, "reachable", err == nil, "reason", errString(err))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() == nil { // else stop has run, or waits for the lock
		c.timer.Reset(max(0, p.opts.Interval-time.Since(start)))
	}
}

// stop ends the probing when the engagement ends; a probe in flight ends
// with the context it asks under.
func (c *probedCluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer.Stop()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// failuresOf reads r's failures with string keys.
func failuresOf(r EngagementReporter) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for name, why := range r.EngagementFailures() {
			out[string(name)] = why
		}
		return out
	}
}
