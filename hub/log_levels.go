package hub

// verbosityOf is the log level of a line about a retried step: 0 when its
// outcome changed, else 1, so that a step failing the same way on every
// retry is logged once at the default level.
func verbosityOf(changed bool) int {
	if changed {
		return 0
	}
	return 1
}
