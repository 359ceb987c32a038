package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A Graph is shared by every cluster's reconcilers: evaluating it from many
// goroutines at once must be safe (run with -race) and give each caller its
// own objects.
func TestGraphIsSafeForConcurrentEvaluation(t *testing.T) {
	g := compileFile(t, "worker-pool", graph.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := graph.Values{
				"schema":   instance(fmt.Sprintf("p%d", i), map[string]any{"image": "x", "regions": []any{"eu", "us"}, "tiers": []any{"a"}}),
				"settings": map[string]any{"metadata": map[string]any{"name": "s"}},
			}
			its, err := g.Node("workers").Iterations(context.Background(), vals)
			if err != nil {
				errs <- err
				return
			}
			for _, it := range its {
				obj, err := g.Node("workers").Render(context.Background(), vals, it)
				if err != nil {
					errs <- err
					return
				}
				obj.SetLabels(map[string]string{"mutated": "yes"})
				if _, err := g.Node("workers").Ready(context.Background(), vals, obj.Object); err != nil {
					errs <- err
					return
				}
			}
			if _, err := g.Status(context.Background(), vals); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	obj, err := g.Node("workers").Render(context.Background(), graph.Values{
		"schema":   instance("p", map[string]any{"image": "x", "regions": []any{"eu"}, "tiers": []any{"a"}}),
		"settings": map[string]any{"metadata": map[string]any{"name": "s"}},
	}, map[string]any{"region": "eu", "tier": "a"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"region": "eu", "tier": "a"}, obj.GetLabels())
}

func BenchmarkRender(b *testing.B) {
	g := compileFile(b, "webapp", graph.Options{})
	vals := graph.Values{"schema": instance("demo", map[string]any{"name": "demo", "image": "nginx", "replicas": int64(2), "port": int64(80)})}
	cm, err := g.Node("configmap").Render(context.Background(), vals, nil)
	require.NoError(b, err)
	vals["configmap"] = cm.Object
	dep := g.Node("deployment")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dep.Render(context.Background(), vals, nil); err != nil {
			b.Fatal(err)
		}
	}
}
