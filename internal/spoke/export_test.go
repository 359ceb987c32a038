package spoke

import "github.com/fleetgraph/fleetgraph/internal/instance"

// KeptAnswerBytes is how many bytes of apply answers the members serving
// the named graph keep in their apply memories, for tests.
func KeptAnswerBytes(rt *Runtime, graphName string) int {
	return sumEngines(rt, graphName, (*instance.Engine).AnswerBytes)
}

// sumEngines adds f over the engines of the members serving the named
// graph.
func sumEngines(rt *Runtime, graphName string, f func(*instance.Engine) int) int {
	rt.mu.Lock()
	gv := rt.graphs[graphName]
	rt.mu.Unlock()
	if gv == nil {
		return 0
	}
	total := 0
	for _, c := range gv.controllers() {
		c.mu.Lock()
		for _, m := range c.members {
			total += f(m.engine)
		}
		c.mu.Unlock()
	}
	return total
}

// OnAnswersHeld has f told, until the test ends, how many answers of the
// API server each node's children held once they were all applied.
func OnAnswersHeld(t interface{ Cleanup(func()) }, f func(node string, answers int)) {
	instance.OnAnswersHeld(t, f)
}

// RememberedWrites is how many instances the members serving the named
// graph keep a copy of their own write for, waiting for the watch to
// deliver it, for tests.
func RememberedWrites(rt *Runtime, graphName string) int {
	return sumEngines(rt, graphName, func(e *instance.Engine) int { return e.Writes().Len() })
}
