package hub

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// notEngaged reports, on each scrape, the clusters the providers of every
// running FanOut could not engage, counted by reason.
var notEngaged = &failureCollector{trackers: map[*tracker]bool{}}

var notEngagedDesc = prometheus.NewDesc("fleetgraph_clusters_not_engaged",
	"Clusters a provider offered but could not engage (unsafe or malformed kubeconfig, unreachable, duplicate server), by reason.",
	[]string{"reason"}, nil)

type failureCollector struct {
	mu       sync.Mutex
	trackers map[*tracker]bool
}

var _ prometheus.Collector = &failureCollector{}

// reportEngagementFailures adds t's provider failures to the
// fleetgraph_clusters_not_engaged metric until the returned func is called.
func reportEngagementFailures(t *tracker) (stop func()) {
	notEngaged.mu.Lock()
	notEngaged.trackers[t] = true
	notEngaged.mu.Unlock()
	return func() {
		notEngaged.mu.Lock()
		delete(notEngaged.trackers, t)
		notEngaged.mu.Unlock()
	}
}

func (c *failureCollector) Describe(ch chan<- *prometheus.Desc) { ch <- notEngagedDesc }

func (c *failureCollector) Collect(ch chan<- prometheus.Metric) {
	byReason := map[string]float64{}
	c.mu.Lock()
	for t := range c.trackers {
		if t.failures == nil {
			continue
		}
		for _, reason := range t.failures() {
			byReason[reasonOf(reason)]++
		}
	}
	c.mu.Unlock()
	for reason, n := range byReason {
		ch <- prometheus.MustNewConstMetric(notEngagedDesc, prometheus.GaugeValue, n, reason)
	}
}

// reasonOf keeps the reason word of a failure ("UnsafeKubeconfig: ..."),
// so the label's values stay few.
func reasonOf(failure string) string {
	for i, r := range failure {
		if r == ':' || r == ' ' {
			return failure[:i]
		}
	}
	return failure
}
