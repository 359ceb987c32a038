package spoke

import (
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// This file brings the instance watch back quickly when the graph's CRD is
// deleted and created again on the cluster. The instance informer does not
// notice by itself: while the kind is not served its list fails and its
// retries back off up to half a minute, so new instances waited that long
// for their first reconcile. So when the kind goes away, the member waits
// until it lists again and replaces the instance informer with a fresh
// one.
//
// How the member learns that the kind went away depends on the cluster.
// On a cluster built with ReportWatchErrors (every provider of ours), the
// instance informer itself says so: its list fails with NotFound. Other
// clusters get an informer of the CRDs' metadata, and the member acts when
// the graph's CRD comes back under a new UID. That informer cost every
// cluster some 13 goroutines and 90 KiB, a tenth of a hub serving 5
// graphs on 1,000 clusters, to learn what the instance informer knows.

var _ toolscache.ResourceEventHandler = crdHandler{}

// crdServedPoll is how soon, at first, the instance kind is checked for
// being served again after it went away.
const crdServedPoll = 100 * time.Millisecond

// crdServedPollMax bounds the checks' backoff while the kind stays away.
const crdServedPollMax = time.Second

// crdFollower follows the graph's CRD on the member's cluster, and brings
// the instance watch back when the CRD is re-created.
type crdFollower struct {
	m *member

	mu sync.Mutex
	// uid is the UID of the graph's CRD as last seen, where the member
	// watches CRDs.
	uid types.UID
	// rewatching is set while the instance watch waits to be replaced
	// after the CRD went away.
	rewatching bool
}

// crdHandler passes the CRDs' events to a crdFollower.
type crdHandler struct{ f *crdFollower }

func (h crdHandler) OnAdd(obj any, _ bool)  { h.seen(obj) }
func (h crdHandler) OnUpdate(_, newObj any) { h.seen(newObj) }
func (h crdHandler) OnDelete(any)           {}

func (h crdHandler) seen(obj any) {
	meta, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || meta.Name != h.f.m.g.CRD.Name {
		return
	}
	h.f.seen(meta.UID)
}

// seen notes the CRD's UID; a new one means the CRD was re-created.
func (f *crdFollower) seen(uid types.UID) {
	f.mu.Lock()
	previous := f.uid
	f.uid = uid
	f.mu.Unlock()
	if previous != "" && previous != uid {
		go f.rewatch()
	}
}

// follow starts following the graph's CRD: through the instance kind's
// watch health where the cluster reports it, else through a watch of the
// CRDs.
func (f *crdFollower) follow() {
	m := f.m
	if m.g.CRD == nil {
		return
	}
	if cacheopts.HealthOf(m.cl) != nil {
		m.watches.health(m.g.Instance.GVK)
		return
	}
	f.watchCRDs()
}

// kindChanged runs when the instance kind starts or stops failing to list
// or watch. Unless it fails for want of permission (the cluster's state is
// intact then), the instance watch is replaced once the kind lists again,
// and the member counts nothing meanwhile: the kind may not be served
// (its CRD was deleted), or the cluster may be coming back with another
// state (rebuilt at the same address, its etcd emptied or restored from
// an older snapshot), which an informer resumed from the resourceVersion
// it last saw may never list: instances the new state lacks would stay
// in its cache, and be counted.
func (f *crdFollower) kindChanged() {
	m := f.m
	err := cacheopts.HealthOf(m.cl).Failing([]schema.GroupVersionKind{m.g.Instance.GVK})[m.g.Instance.GVK]
	if err == nil || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return
	}
	f.restart()
}

// lost is told that the graph's CRD went away on the cluster, by whoever
// watches it (the hub's fan-out, Runtime.CRDLost): the instance informer
// may not notice, when the CRD is back before it lists again, or when the
// cluster's state went back in time (an etcd emptied or restored: its
// watch waits for a resourceVersion the server will not reach soon). So
// the instance watch is replaced once the kind lists again, and the
// member counts nothing meanwhile.
func (f *crdFollower) lost() {
	select {
	case <-f.m.ready:
	default:
		return // the instance watch has not started yet: it lists afresh
	}
	f.restart()
}

// restart replaces the instance watch once the kind lists, unless that
// is under way already.
func (f *crdFollower) restart() {
	f.mu.Lock()
	running := f.rewatching
	f.rewatching = true
	f.mu.Unlock()
	if running {
		return
	}
	f.countsChanged() // uncounted meanwhile (counts.go)
	go func() {
		defer func() {
			f.mu.Lock()
			f.rewatching = false
			f.mu.Unlock()
			f.countsChanged()
		}()
		f.rewatch()
	}()
}

// countsChanged tells Options.CountsChanged that the member's count
// changed: it is not counted while the instance watch waits.
func (f *crdFollower) countsChanged() {
	if tell := f.m.c.opts.CountsChanged; tell != nil {
		tell(f.m.g.Name)
	}
}

// busy reports whether the instance watch is being replaced: its cache
// may not hold every instance meanwhile.
func (f *crdFollower) busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rewatching
}

// watchCRDs starts following the graph's CRD through a watch of the CRDs'
// metadata. A cluster that does not let us watch CRDs is served all the
// same, with the informer's own recovery.
func (f *crdFollower) watchCRDs() {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := f.m.watches.shared(crd, crdHandler{f}); err != nil {
		f.m.log.Info("not watching the graph's CRD; a re-created CRD is noticed late", "reason", err.Error())
	}
}

// kindLists reports whether the instance kind lists, into list.
func (f *crdFollower) kindLists(list *metav1.PartialObjectMetadataList) bool {
	ctx, cancel := f.m.callCtx()
	defer cancel()
	return f.m.cl.GetAPIReader().List(ctx, list, client.Limit(1)) == nil
}

// rewatch waits until the instance kind lists again, then replaces the
// instance informer, whose new initial list enqueues every instance.
func (f *crdFollower) rewatch() {
	m := f.m
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(m.g.Instance.GVK.GroupVersion().WithKind(m.g.Instance.GVK.Kind + "List"))
	// The kind may stay away (a tenant deleted the CRD and the hub cannot
	// put it back), so the checks slow down to one a second. (wait.Backoff
	// with a Cap stops at the cap, so this loops itself.)
	for delay := crdServedPoll; !f.kindLists(list); delay = min(2*delay, crdServedPollMax) {
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(delay):
		}
	}
	inst := &unstructured.Unstructured{}
	inst.SetGroupVersionKind(m.g.Instance.GVK)
	if err := m.cl.GetCache().RemoveInformer(m.ctx, inst); err != nil {
		m.log.Info("could not restart the instance watch", "reason", err.Error())
		return
	}
	delay := m.c.opts.GateRetry
	for m.ctx.Err() == nil {
		if err := m.watches.instances(inst, m.newInstanceHandler()); err == nil {
			m.log.V(1).Info("instance watch restarted after the CRD came back")
			return
		}
		select {
		case <-m.ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, m.c.opts.GateRetryMax)
	}
}
