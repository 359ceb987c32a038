package graph

// ForgetCompiles empties the process-wide caches that a compile fills from
// the graph's own text: the parses of its expressions (kept from a text's
// second parse on) and the verdicts on its CRD. After it, compiling any
// graph costs what compiling a graph never seen before costs. For
// benchmarks; not safe while another compile runs.
func ForgetCompiles() {
	parses.Lock()
	clear(parses.m)
	clear(parses.seen)
	clear(parses.macros)
	parses.Unlock()
	crdVerdicts.mu.Lock()
	clear(crdVerdicts.m)
	crdVerdicts.mu.Unlock()
}

// ForgetKinds empties the process-wide caches of the child kinds' CEL
// types, formats and environments, which every graph using the same kinds
// shares: after it and ForgetCompiles, a compile costs what the first
// compile in a process costs (the base CEL environments, built once per
// process, excepted). For benchmarks; not safe while another compile runs.
func ForgetKinds() {
	for _, c := range []interface{ forget() }{declCache, formatCache} {
		c.forget()
	}
	kindEnvs.Lock()
	clear(kindEnvs.m)
	kindEnvs.Unlock()
}

func (c *boundedCache[K, V]) forget() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}
