//go:build integration && hostile

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
type floorProbe struct {
	c       client.WithWatch
	ns      string
	mu      sync.Mutex
	samples []time.Duration
}

const floorObject = "floor-note"

// run writes the change every interval and answers it, until ctx ends.
func (p *floorProbe) run(ctx context.Context, interval time.Duration) error {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: floorObject}, Data: map[string]string{"note": "0"}}
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

// sample writes note i and waits until the answer for it shows.
func (p *floorProbe) sample(ctx context.Context, i int) (time.Duration, error) {
	w, err := p.watch(ctx)
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	patch := fmt.Appendf(nil, `{"data":{"note":"%d"}}`, i)
	if err := p.c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: floorObject}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
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
			if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && cm.Data["observed"] == fmt.Sprint(i) {
				return time.Since(start), nil
			}
		}
	}
}

// answer is the plain controller: for each new note it applies a child
// and writes back that it saw the note.
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
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Data["note"] == cm.Data["observed"] {
				continue
			}
			note := cm.Data["note"]
			child := &corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: floorObject + "-child"},
				Data:       map[string]string{"note": note},
			}
			if err := p.c.Patch(ctx, child, client.Apply, client.FieldOwner("floor"), client.ForceOwnership); err != nil { //nolint:staticcheck // the same apply the hub makes
				continue
			}
			back := fmt.Appendf(nil, `{"data":{"observed":%q}}`, note)
			_ = p.c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, back))
		}
		w.Stop()
	}
}

func (p *floorProbe) watch(ctx context.Context) (watch.Interface, error) {
	return p.c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(p.ns), client.MatchingFields{"metadata.name": floorObject})
}

// percentiles returns the floor's p50 and p99, and how many samples.
func (p *floorProbe) percentiles() (p50, p99 time.Duration, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return percentile(p.samples, 50), percentile(p.samples, 99), len(p.samples)
}
