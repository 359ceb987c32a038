package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

const (
	// DefaultProbeInterval is how often each engaged cluster is probed.
	DefaultProbeInterval = 5 * time.Second
	// DefaultProbeTimeout bounds one probe.
	DefaultProbeTimeout = 5 * time.Second
)

var (
	_ multicluster.Aware = &Prober{}
)

// ProberOptions configures a Prober. The zero value is usable.
type ProberOptions struct {
	// Interval is the time between the start of two probes of one cluster.
	// A cluster that stops answering is reported Unreachable at most
	// Interval+Timeout after its last good answer. Defaults to
	// DefaultProbeInterval.
	Interval time.Duration
	// Timeout bounds one probe. Defaults to DefaultProbeTimeout.
	Timeout time.Duration
	// Path is the URL path asked below each cluster's host; any answer but
	// 200 counts as not ready. Defaults to "/readyz". A kcp APIExport
	// virtual workspace serves no /readyz per consumer: probe "/apis" there.
	Path string
	// Logger defaults to controller-runtime's log.Log named "prober".
	Logger logr.Logger
}

func (o ProberOptions) withDefaults() ProberOptions {
	if o.Interval <= 0 {
		o.Interval = DefaultProbeInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultProbeTimeout
	}
	if o.Path == "" {
		o.Path = "/readyz"
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("prober")
	}
	return o
}

// Prober asks every engaged cluster's API server, on a fixed interval and
// with a timeout, whether it is ready (GET /readyz), and records the answer
// in a Tracker: a cluster that does not answer in time, or answers anything
// but 200, is Unreachable in every graph's status until it answers again.
// One probe per cluster is in flight at a time, so a dead cluster costs one
// goroutine and no other cluster waits for it. Clusters behind one API
// server and identity share its answers (probe_share.go): for them the
// bound above grows by probeShareWindow (1 s).
//
// Add it to the multicluster manager (it implements multicluster.Aware and
// manager.Runnable); probing a cluster stops when its engagement ends.
type Prober struct {
	opts    ProberOptions
	tracker *Tracker
	shared  sharedProbes // probe_share.go
}

// NewProber returns a Prober that records into tracker.
func NewProber(tracker *Tracker, opts ProberOptions) *Prober {
	return &Prober{opts: opts.withDefaults(), tracker: tracker}
}

// Start implements manager.Runnable; probing runs per engagement.
func (p *Prober) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Engage starts probing cl until ctx ends. It returns at once.
func (p *Prober) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	go p.run(ctx, string(name), cl)
	return nil
}

func (p *Prober) run(ctx context.Context, name string, cl cluster.Cluster) {
	t := time.NewTicker(p.opts.Interval)
	defer t.Stop()
	for {
		err := p.shared.probe(ctx, cl, func() error { return ProbePath(ctx, cl, p.opts.Path, p.opts.Timeout) })
		if ctx.Err() != nil {
			return
		}
		if p.tracker.SetReachable(ctx, name, err) {
			p.opts.Logger.Info("cluster reachability changed", "cluster", name, "reachable", err == nil, "reason", errString(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Probe asks cl's API server whether it is ready, waiting at most timeout.
// Errors name the cause, never credentials.
func Probe(ctx context.Context, cl cluster.Cluster, timeout time.Duration) error {
	return ProbePath(ctx, cl, "/readyz", timeout)
}

// ProbePath is Probe asking path instead of /readyz.
func ProbePath(ctx context.Context, cl cluster.Cluster, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := strings.TrimSuffix(cl.GetConfig().Host, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("malformed server URL: %w", err)
	}
	resp, err := cl.GetHTTPClient().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer to %s within %s", path, timeout)
		}
		return &probeError{msg: fmt.Sprintf("probing %s: %s", path, shorten(err.Error(), maxProbeCause)), err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		// The code alone: the reason phrase is the server's to choose, and
		// this message reaches the fleet status.
		return fmt.Errorf("%s answered %d %s", path, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return nil
}

// maxProbeCause bounds the part of a probe's error that comes from the
// network or TLS library (a certificate's names, say): the error reaches
// the fleet status on the RGD.
const maxProbeCause = 160

// probeError is a failed probe: a short message, and the cause.
type probeError struct {
	msg string
	err error
}

func (e *probeError) Error() string { return e.msg }
func (e *probeError) Unwrap() error { return e.err }

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// EngagementReporter is implemented by providers that can say which of the
// clusters they know they could not engage, and why. It is optional: the
// hub checks for it with a type assertion, so providers need not import
// this package. The reasons must not carry credentials.
type EngagementReporter interface {
	// EngagementFailures returns, per cluster name, why the cluster is not
	// engaged (e.g. "UnsafeKubeconfig: ..."). A cluster that is engaged, or
	// whose source is gone, is not listed. Safe for concurrent use.
	EngagementFailures() map[multicluster.ClusterName]string
}

// FailuresOf returns a Tracker.Failures function for provider, or nil if
// the provider does not implement EngagementReporter.
func FailuresOf(provider multicluster.Provider) func() map[string]string {
	r, ok := provider.(EngagementReporter)
	if !ok {
		return nil
	}
	return func() map[string]string {
		out := map[string]string{}
		for name, why := range r.EngagementFailures() {
			out[string(name)] = why
		}
		return out
	}
}
