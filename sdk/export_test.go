package sdk

import "time"

// SetNoClusterWarning shortens the wait before a Hub warns that its
// provider engaged no cluster, so a test need not wait 30 seconds.
func SetNoClusterWarning(h *Hub, d time.Duration) { h.noClusterWarning = d }

// WorkersOf is the worker count the Hub's newly served graphs get.
func WorkersOf(h *Hub) int { return h.runtime.Workers() }
