package hub

import "time"

// The steps of registering a graph and fanning its CRD out, as StepFunc
// names them. A benchmark that adds them up can say where the time between
// RegisterGraph and Established goes (sdk's BenchmarkCRDFanOut does).
const (
	// StepCompile, StepRevision and StepServe are RegisterGraph's own:
	// compiling the RGD, recording its GraphRevision on the hub, and
	// handing the graph to the runtime.
	StepCompile  = "compile"
	StepRevision = "revision"
	StepServe    = "serve"
	// StepChecks: the three reads before anything is written, made at
	// once: StepKinds, StepSchemas and StepRead.
	StepChecks = "checks"
	// StepKinds: discovery says whether the cluster serves every kind the
	// graph's resources use.
	StepKinds = "kinds"
	// StepSchemas: the graph type-checked against the cluster's OpenAPI.
	StepSchemas = "schemas"
	// StepRead: the CRD read back (ownership, breaking change).
	StepRead = "read"
	// StepRetract: a former admission policy binding removed before the
	// CRD is created anew.
	StepRetract = "retract"
	// StepApply: the CRD applied with server-side apply.
	StepApply = "apply"
	// StepEstablished: the wait for the CRD's Established condition.
	StepEstablished = "established"
	// StepConfirm: a standing check of the cluster's server confirmed with
	// one metadata read (shared_ensure.go).
	StepConfirm = "confirm"
	// StepEnsure is the whole of Ensure on one cluster, from the gate's
	// call to its outcome being recorded.
	StepEnsure = "ensure"
)

// StepFunc is told how long one step took for a graph on a cluster ("" for
// RegisterGraph's own steps). It is called synchronously and must be quick.
type StepFunc func(graph, cluster, step string, took time.Duration)

// stepClock times consecutive steps of one graph on one cluster. A nil
// StepFunc makes it free.
type stepClock struct {
	on             StepFunc
	graph, cluster string
	last           time.Time
}

func newStepClock(on StepFunc, graph, cluster string) *stepClock {
	c := &stepClock{on: on, graph: graph, cluster: cluster}
	if on != nil {
		c.last = time.Now()
	}
	return c
}

// lap reports the time since the previous lap (or the clock's start) as
// step.
func (c *stepClock) lap(step string) {
	if c.on == nil {
		return
	}
	now := time.Now()
	c.on(c.graph, c.cluster, step, now.Sub(c.last))
	c.last = now
}
