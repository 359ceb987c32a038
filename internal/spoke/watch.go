package spoke

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/instance"
)

// watches are a member's own watches on its cluster: its handler on the
// instance informer, the metadata-only instance watch (instance_heads.go),
// the CRDs' (crd.go), and what the cluster's watch health says of the
// instance kind. The watches of children and external references are the
// engine's. Every handler is removed when the member ends, while the
// informers belong to the cluster and stop with it.
type watches struct {
	m *member
}

var _ cacheopts.Listener = &watches{}

func newWatches(m *member) *watches { return &watches{m: m} }

// instances adds h to the cluster cache's informer for obj's kind and
// waits until h has seen every object the informer holds; the handler is
// removed when the member ends.
func (w *watches) instances(obj client.Object, h toolscache.ResourceEventHandler) error {
	m := w.m
	inf, err := m.cl.GetCache().GetInformer(m.ctx, obj)
	if err != nil {
		return fmt.Errorf("watching %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("watching %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	m.addCleanup(func() { _ = inf.RemoveEventHandler(reg) })
	if err := instance.WaitSynced(m.ctx, reg); err != nil {
		return fmt.Errorf("watching %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	return nil
}

// shared adds h to the cluster's shared handler for the metadata kind of
// meta, until the member ends; it returns once h has seen every object the
// informer holds.
func (w *watches) shared(meta *metav1.PartialObjectMetadata, h toolscache.ResourceEventHandler) error {
	leave, err := w.m.cl.Listen(w.m.ctx, meta, h)
	if err != nil {
		return err
	}
	w.m.addCleanup(leave)
	return nil
}

// health makes the member hear when gvk starts or stops failing on its
// cluster (WatchHealthChanged), until the member ends. A cluster built
// without cacheopts.ReportWatchErrors has nothing to tell.
func (w *watches) health(gvk schema.GroupVersionKind) {
	h := cacheopts.HealthOf(w.m.cl.Cluster)
	if h == nil {
		return
	}
	h.Listen(w.m.cluster.String(), w, gvk)
	w.m.addCleanup(func() { h.Forget(w) })
}

// WatchHealthChanged follows the instance kind's watch: a kind that went
// away (its CRD deleted) gets its instance watch back once it is served
// again, and every instance is requeued, its status showing the change.
// It implements cacheopts.Listener.
func (w *watches) WatchHealthChanged(gvk schema.GroupVersionKind) {
	m := w.m
	if m.ctx.Err() != nil {
		return
	}
	if gvk == m.g.Instance.GVK {
		m.crd.kindChanged()
	}
	m.requeueAll("the instance kind's watch health changed")
}

// tombstone unwraps a deleted object whose final state the informer missed.
func tombstone(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
