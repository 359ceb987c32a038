package sdk

import (
	"time"

	"github.com/fleetgraph/fleetgraph/internal/hub"
)

// SetNoClusterWarning shortens the wait before a Hub warns that its
// provider engaged no cluster, so a test need not wait 30 seconds.
func SetNoClusterWarning(h *Hub, d time.Duration) { h.noClusterWarning = d }

// WorkersOf is the worker count the Hub's newly served graphs get.
func WorkersOf(h *Hub) int { return h.runtime.Workers() }

// ObserveSteps has the Hub tell f how long each step of registering and
// fanning out a graph takes (hub.StepFunc); nil stops it.
func ObserveSteps(h *Hub, f func(graph, cluster, step string, took time.Duration)) {
	if f == nil {
		h.steps.Store(nil)
		return
	}
	step := hub.StepFunc(f)
	h.steps.Store(&step)
}
