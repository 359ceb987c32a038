package graph

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// BenchmarkEvaluateWebApp evaluates an ordinary graph as a reconcile does
// (every node's includeWhen, forEach, template and readyWhen, then the
// status) with the guards, meter, sizer and budget ("metered"), and with
// none of them ("unmetered", the floor): what bounding a tenant costs an
// ordinary instance.
func BenchmarkEvaluateWebApp(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "webapp.yaml"))
	require.NoError(b, err)
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(b, yaml.UnmarshalStrict(raw, rgd))
	for _, mode := range []struct {
		name string
		off  bool
	}{{"unmetered", true}, {"metered", false}} {
		unmetered = mode.off
		g, err := Compile(rgd, Options{})
		unmetered = false
		require.NoError(b, err)
		b.Run(mode.name, func(b *testing.B) {
			unmetered = mode.off
			defer func() { unmetered = false }()
			b.ReportAllocs()
			for b.Loop() {
				reconcileOnce(b, g)
			}
		})
	}
}

// reconcileOnce evaluates every node and the status of one instance.
func reconcileOnce(b *testing.B, g *Graph) {
	ctx := WithBudget(context.Background(), NewBudget(g.Limits()))
	vals := Values{"schema": map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "demo", "namespace": "default"},
		"spec":     map[string]any{"name": "demo", "image": "nginx:1.27", "replicas": int64(3), "port": int64(8080)},
	}}
	for _, n := range g.Nodes {
		if ok, err := n.Included(ctx, vals); err != nil || !ok {
			b.Fatal(ok, err)
		}
		its, err := n.Iterations(ctx, vals)
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range its {
			obj, err := n.Render(ctx, vals, it)
			if err != nil {
				b.Fatal(err)
			}
			vals[n.ID] = obj.Object
			if _, err := n.Ready(ctx, vals, obj.Object); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := g.Status(ctx, vals); err != nil {
		b.Fatal(err)
	}
}
