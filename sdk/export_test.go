package sdk

import "time"

// SetNoClusterWarning shortens the wait before a Hub warns that its
// provider engaged no cluster, so a test need not wait 30 seconds.
func SetNoClusterWarning(h *Hub, d time.Duration) { h.noClusterWarning = d }
