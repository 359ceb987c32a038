package sdk

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/fleetgraph/fleetgraph/internal/steps"
)

// SetNoClusterWarning shortens the wait before a Hub warns that its
// provider engaged no cluster, so a test need not wait 30 seconds.
func SetNoClusterWarning(h *Hub, d time.Duration) { h.clusterSource.noClusterWarning = d }

// WorkersOf is the worker count the Hub's newly served graphs get.
func WorkersOf(h *Hub) int { return h.runtime.Workers() }

// CompileCounts returns how many compiles the Hub started, and how many
// times it handed out a remembered result instead.
func CompileCounts(h *Hub) (runs, reused int64) {
	return h.registrar.compiles.runs.Load(), h.registrar.compiles.reuses.Load()
}

// ServedImageDefault returns, for the named graph as served, the default
// of spec.image as its registered spec writes it and as its compiled CRD
// has it.
func ServedImageDefault(h *Hub, name string) (spec, crd string) {
	h.mu.Lock()
	reg := h.graphs[name]
	h.mu.Unlock()
	var fields map[string]string
	_ = json.Unmarshal(reg.spec.Schema.Spec.Raw, &fields)
	_, spec, _ = strings.Cut(fields["image"], "default=")
	props := reg.graph.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
	return spec, string(props["image"].Default.Raw)
}

// ObserveSteps has the Hub tell f how long each step of registering and
// fanning out a graph takes (internal/steps); nil stops it.
func ObserveSteps(h *Hub, f func(graph, cluster, step string, took time.Duration)) {
	if f == nil {
		h.steps.Store(nil)
		return
	}
	step := steps.Func(f)
	h.steps.Store(&step)
}
