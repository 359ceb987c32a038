//go:build integration && hostile

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// floorProbe is the benign tenant's path without the hub, the floor its
// latency is judged against: on the same API server, from the same
// process (so sharing its CPU with the hub), at the same pace, a change
// is written and a plain controller answers it as the hub answers a
// benign instance's, with one apply of a child and one write back on the
// object, which the probe sees through its own watch. Every request and
// watch hop of a benign reconcile is in it; the hub's informers, queue,
// evaluation and bookkeeping are not.
//
// On a ConfigMap it is the floor for any kind. On an instance of the
// hostile graph's own kind (which the hub also serves, as a benign
// instance) both watch hops go through the API server's event stream of
// that kind, behind the hostile instances' large events, as a benign
// instance of that graph does.
type floorProbe struct {
	c        client.WithWatch
	gvk      schema.GroupVersionKind
	ns, name string
	// note is the path of the field the probe changes.
	note    []string
	mu      sync.Mutex
	samples []time.Duration
}

// floorObserved is the annotation the plain controller writes back.
const floorObserved = "fleetgraph-test/observed"

// run writes the change every interval and answers it, until ctx ends.
func (p *floorProbe) run(ctx context.Context, interval time.Duration) error {
	obj := p.object()
	if err := unstructured.SetNestedField(obj.Object, "0", p.note...); err != nil {
		return err
	}
	if err := client.IgnoreAlreadyExists(p.c.Create(ctx, obj)); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { p.answer(ctx) })
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 1; ctx.Err() == nil; i++ {
		if d, err := p.sample(ctx, i); err == nil {
			p.mu.Lock()
			p.samples = append(p.samples, d)
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	return nil
}

func (p *floorProbe) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(p.gvk)
	u.SetNamespace(p.ns)
	u.SetName(p.name)
	return u
}

// mergePatch is a merge patch setting value at path.
func mergePatch(path []string, value string) []byte {
	patch := fmt.Sprintf("%q", value)
	for i := len(path) - 1; i >= 0; i-- {
		patch = fmt.Sprintf("{%q:%s}", path[i], patch)
	}
	return []byte(patch)
}

// sample writes note i and waits until the answer for it shows.
func (p *floorProbe) sample(ctx context.Context, i int) (time.Duration, error) {
	w, err := p.watch(ctx)
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	if err := p.c.Patch(ctx, p.object(), client.RawPatch(types.MergePatchType, mergePatch(p.note, fmt.Sprint(i)))); err != nil {
		return 0, err
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-deadline:
			return 30 * time.Second, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("the floor's watch closed")
			}
			if u, isU := ev.Object.(*unstructured.Unstructured); isU && u.GetAnnotations()[floorObserved] == fmt.Sprint(i) {
				return time.Since(start), nil
			}
		}
	}
}

// answer is the plain controller: for each new note it applies a child
// ConfigMap and writes back that it saw the note.
func (p *floorProbe) answer(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := p.watch(ctx)
		if err != nil {
			select { // the API server is busy: ask again shortly
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			note, _, _ := unstructured.NestedString(u.Object, p.note...)
			if note == u.GetAnnotations()[floorObserved] {
				continue
			}
			if p.applyChild(ctx, note) != nil {
				continue
			}
			back := mergePatch([]string{"metadata", "annotations", floorObserved}, note)
			_ = p.c.Patch(ctx, p.object(), client.RawPatch(types.MergePatchType, back))
		}
		w.Stop()
	}
}

func (p *floorProbe) applyChild(ctx context.Context, note string) error {
	child := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"note": note}}}
	child.SetGroupVersionKind(configMapKind)
	child.SetNamespace(p.ns)
	child.SetName(p.name + "-floor-child")
	return p.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(child), client.FieldOwner("floor"), client.ForceOwnership)
}

func (p *floorProbe) watch(ctx context.Context) (watch.Interface, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(p.gvk.GroupVersion().WithKind(p.gvk.Kind + "List"))
	return p.c.Watch(ctx, list, client.InNamespace(p.ns), client.MatchingFields{"metadata.name": p.name})
}

// percentiles returns the floor's p50 and p99, and how many samples.
func (p *floorProbe) percentiles() (p50, p99 time.Duration, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return percentile(p.samples, 50), percentile(p.samples, 99), len(p.samples)
}
