package testing

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// ServerLoad is what an API server reports, in its metrics, of the work it
// has done so far: the seconds it spent answering requests (from arrival
// to answer, waits included) and the watch events it sent, each by kind of
// request. A benchmark reads it before and after a phase (Sub) to see
// where the server's time went.
type ServerLoad struct {
	// RequestSeconds is keyed by "VERB resource[/subresource]" (a path
	// without resource is its path). Watches are left out: the server
	// counts one when it ends, with its whole life.
	RequestSeconds map[string]float64
	// Requests counts the same requests.
	Requests map[string]float64
	// WatchEvents is keyed by resource.
	WatchEvents map[string]float64
}

// Load reads the API server's metrics.
func (c *Cluster) Load(ctx context.Context) (ServerLoad, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return ServerLoad{}, fmt.Errorf("client for %s: %w", c.Name, err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return ServerLoad{}, fmt.Errorf("reading %s's metrics: %w", c.Name, err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return ServerLoad{}, fmt.Errorf("parsing %s's metrics: %w", c.Name, err)
	}
	l := ServerLoad{RequestSeconds: map[string]float64{}, Requests: map[string]float64{}, WatchEvents: map[string]float64{}}
	if f := families["apiserver_request_duration_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			if verb := label(m.GetLabel(), "verb"); verb == "WATCH" || verb == "WATCHLIST" || verb == "CONNECT" {
				continue // long-running: counted when they end, with their whole life
			}
			key := requestKey(m.GetLabel())
			l.RequestSeconds[key] += m.GetHistogram().GetSampleSum()
			l.Requests[key] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if f := families["apiserver_watch_events_total"]; f != nil {
		for _, m := range f.GetMetric() {
			l.WatchEvents[label(m.GetLabel(), "resource")] += m.GetCounter().GetValue()
		}
	}
	return l, nil
}

func label(labels []*dto.LabelPair, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func requestKey(labels []*dto.LabelPair) string {
	what := label(labels, "resource")
	if sub := label(labels, "subresource"); sub != "" {
		what += "/" + strings.TrimPrefix(sub, "/")
	}
	return label(labels, "verb") + " " + what
}

// Add returns the work of l and o together (e.g. over samples).
func (l ServerLoad) Add(o ServerLoad) ServerLoad {
	add := func(a, b map[string]float64) map[string]float64 {
		out := maps.Clone(a)
		if out == nil {
			out = map[string]float64{}
		}
		for k, v := range b {
			out[k] += v
		}
		return out
	}
	return ServerLoad{RequestSeconds: add(l.RequestSeconds, o.RequestSeconds), Requests: add(l.Requests, o.Requests), WatchEvents: add(l.WatchEvents, o.WatchEvents)}
}

// Sub returns the work done between o and l.
func (l ServerLoad) Sub(o ServerLoad) ServerLoad {
	sub := func(a, b map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range a {
			if d := v - b[k]; d > 0 {
				out[k] = d
			}
		}
		return out
	}
	return ServerLoad{RequestSeconds: sub(l.RequestSeconds, o.RequestSeconds), Requests: sub(l.Requests, o.Requests), WatchEvents: sub(l.WatchEvents, o.WatchEvents)}
}

// String lists the request kinds that took the most seconds (up to ten)
// and the watch events sent, most first.
func (l ServerLoad) String() string {
	var b strings.Builder
	keys := slices.SortedFunc(maps.Keys(l.RequestSeconds), func(x, y string) int {
		return -cmpFloat(l.RequestSeconds[x], l.RequestSeconds[y])
	})
	total := 0.0
	for _, v := range l.RequestSeconds {
		total += v
	}
	fmt.Fprintf(&b, "request seconds %.2f:", total)
	for i, k := range keys {
		if i == 10 {
			break
		}
		fmt.Fprintf(&b, " %s %.2fs/%.0f;", k, l.RequestSeconds[k], l.Requests[k])
	}
	b.WriteString(" watch events:")
	for _, k := range slices.SortedFunc(maps.Keys(l.WatchEvents), func(x, y string) int { return -cmpFloat(l.WatchEvents[x], l.WatchEvents[y]) }) {
		fmt.Fprintf(&b, " %s %.0f;", k, l.WatchEvents[k])
	}
	return b.String()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
