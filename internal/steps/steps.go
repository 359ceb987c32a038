// Package steps times the steps of registering a graph and fanning its CRD
// out, for benchmarks that must say where the time between RegisterGraph
// and Established goes (sdk's BenchmarkCRDFanOut). An observer travels in
// the context: code that has none pays nothing, and the public hub package
// needs no option for it.
package steps

import (
	"context"
	"time"
)

// The steps, as Func names them.
const (
	// Compile, Revision and Serve are RegisterGraph's own: compiling the
	// RGD, recording its GraphRevision on the hub, and handing the graph
	// to the runtime.
	Compile  = "compile"
	Revision = "revision"
	Serve    = "serve"
	// Checks: the three reads before anything is written, made at once:
	// Kinds, Schemas and Read.
	Checks = "checks"
	// Kinds: discovery says whether the cluster serves every kind the
	// graph's resources use.
	Kinds = "kinds"
	// Schemas: the graph's own check (sdk: type-checked against the
	// cluster's OpenAPI).
	Schemas = "schemas"
	// Read: the CRD read back (ownership, breaking change).
	Read = "read"
	// Retract: a former admission policy binding removed before the CRD is
	// created anew.
	Retract = "retract"
	// Apply: the CRD applied with server-side apply.
	Apply = "apply"
	// Established: the wait for the CRD's Established condition.
	Established = "established"
	// Confirm: a standing check of the cluster's server confirmed with one
	// metadata read.
	Confirm = "confirm"
	// Ensure is the whole of one fan-out attempt on one cluster, from the
	// gate's call to its outcome being recorded.
	Ensure = "ensure"
)

// Func is told how long one step took for a graph on a cluster ("" for
// RegisterGraph's own steps). It is called synchronously and must be quick.
type Func func(graph, cluster, step string, took time.Duration)

type key struct{}

// With returns ctx carrying f; a nil f returns ctx as it is.
func With(ctx context.Context, f Func) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, f)
}

// Clock times consecutive steps of one graph on one cluster. Without an
// observer in the context it is free.
type Clock struct {
	on             Func
	graph, cluster string
	last           time.Time
}

// Start returns a clock started now, reporting to ctx's observer.
func Start(ctx context.Context, graph, cluster string) *Clock {
	f, _ := ctx.Value(key{}).(Func)
	c := &Clock{on: f, graph: graph, cluster: cluster}
	if f != nil {
		c.last = time.Now()
	}
	return c
}

// Lap reports the time since the previous lap (or the clock's start) as
// step.
func (c *Clock) Lap(step string) {
	if c.on == nil {
		return
	}
	now := time.Now()
	c.on(c.graph, c.cluster, step, now.Sub(c.last))
	c.last = now
}
