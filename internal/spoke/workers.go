package spoke

// SetWorkers sets Options.Workers for the graph versions served from now
// on; versions already served keep their workers. It lets the hub take the
// count from its manager's controller options, which it learns after New.
// n <= 0 is ignored.
func (rt *Runtime) SetWorkers(n int) {
	if n <= 0 {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.opts.Workers = n
}

// Workers returns the Options.Workers that newly served graph versions get.
func (rt *Runtime) Workers() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.opts.Workers
}
