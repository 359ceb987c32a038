package hub

import (
	"context"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// A watcher follows, on one API server, the metadata of the CRDs and
// admission policies labelled as fleetgraph's, and tells the FanOut
// (gone, repair.go) when one it saw goes: a DELETED event, an update that
// sets its deletion timestamp, or a list (at start, and after every
// watch ends or fails) that no longer shows it. The last catches what a
// watch cannot: a server whose storage was wiped or restored while the
// watch was down. It is one raw watch per kind, no informer: a few
// goroutines per server, shared by every cluster served from it.

// Backoff of a watcher's lists after a failure.
const (
	watchRetry    = 200 * time.Millisecond
	watchRetryMax = time.Second
)

var (
	crdResource     = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	policyResource  = admissionv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies")
	bindingResource = admissionv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings")
)

// watcher watches one server for the FanOut.
type watcher struct {
	f      *FanOut
	server string
	client metadata.Interface // nil when it could not be made
	ctx    context.Context
	cancel context.CancelFunc
	// users are the clusters of the server that keep graphs (repair.go).
	users map[string]bool

	once sync.Once // starts the admission kinds' watches
}

// serverOf names c's server for the watchers: its server key, or the
// cluster itself when it has none.
func serverOf(c Cluster) string {
	if key, ok := serverKey(c.Cluster.GetConfig()); ok {
		return key
	}
	return "cluster/" + c.Name
}

// newWatcher starts watching the CRDs of server, reached through c.
func (f *FanOut) newWatcher(server string, c Cluster) *watcher {
	ctx, cancel := context.WithCancel(f.ctx)
	w := &watcher{f: f, server: server, ctx: ctx, cancel: cancel, users: map[string]bool{}}
	md, err := metadata.NewForConfigAndClient(c.Cluster.GetConfig(), c.Cluster.GetHTTPClient())
	if err != nil {
		f.opts.Logger.Info("not watching the cluster for deleted CRDs; they come back at the next Ensure",
			"cluster", c.Name, "reason", err.Error())
		return w
	}
	w.client = md
	go w.follow(crdResource, kindCRD)
	return w
}

// watchAdmission starts watching the admission policies and bindings too.
func (w *watcher) watchAdmission() {
	if w.client == nil {
		return
	}
	w.once.Do(func() {
		go w.follow(policyResource, kindPolicy)
		go w.follow(bindingResource, kindBinding)
	})
}

func (w *watcher) stop() { w.cancel() }

// follow lists and watches one kind until the watcher stops, telling gone
// about every object it saw that went. A server that does not serve the
// kind is not watched for it.
func (w *watcher) follow(res schema.GroupVersionResource, kind objectKind) {
	seen := map[string]bool{}
	delay := watchRetry
	for w.ctx.Err() == nil {
		rv, err := w.list(res, kind, seen)
		if err == nil {
			delay = watchRetry
			err = w.watch(res, kind, rv, seen)
		}
		if apierrors.IsNotFound(err) && kind != kindCRD {
			return // the server does not serve admission policies
		}
		if err == nil {
			continue // the watch ended: list again
		}
		select {
		case <-w.ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, watchRetryMax)
	}
}

// listOptions select the objects labelled as fleetgraph's.
func listOptions(rv string) metav1.ListOptions {
	return metav1.ListOptions{
		LabelSelector:       v1alpha1.LabelManagedBy + "=" + v1alpha1.ManagedByFleetgraph,
		ResourceVersion:     rv,
		AllowWatchBookmarks: rv != "",
	}
}

// list lists the kind, reports every object seen before that the list
// lacks, and every object it shows being deleted, as gone, and returns the list's
// resourceVersion.
func (w *watcher) list(res schema.GroupVersionResource, kind objectKind, seen map[string]bool) (string, error) {
	ctx, cancel := w.f.request(w.ctx)
	defer cancel()
	list, err := w.client.Resource(res).List(ctx, listOptions(""))
	if err != nil {
		return "", err
	}
	now := make(map[string]bool, len(list.Items))
	for _, item := range list.Items {
		now[item.Name] = true
		if item.DeletionTimestamp != nil {
			w.f.gone(w.server, kind, item.Name)
		}
	}
	for name := range seen {
		if !now[name] {
			w.f.gone(w.server, kind, name)
		}
	}
	clear(seen)
	for name := range now {
		seen[name] = true
	}
	return list.ResourceVersion, nil
}

// watch follows the kind from rv until the watch ends (nil) or fails.
func (w *watcher) watch(res schema.GroupVersionResource, kind objectKind, rv string, seen map[string]bool) error {
	wi, err := w.client.Resource(res).Watch(w.ctx, listOptions(rv))
	if err != nil {
		return err
	}
	defer wi.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			obj, ok := ev.Object.(*metav1.PartialObjectMetadata)
			if !ok {
				continue
			}
			w.event(ev.Type, obj, kind, seen)
		}
	}
}

// event notes one watch event of the kind.
func (w *watcher) event(typ watch.EventType, obj *metav1.PartialObjectMetadata, kind objectKind, seen map[string]bool) {
	switch {
	case typ == watch.Bookmark:
	case typ == watch.Deleted:
		if seen[obj.Name] {
			delete(seen, obj.Name)
			w.f.gone(w.server, kind, obj.Name)
		}
	case obj.DeletionTimestamp != nil:
		// Being deleted: shown at once; the repair waits for it to go,
		// and its DELETED event asks for one more attempt.
		seen[obj.Name] = true
		w.f.gone(w.server, kind, obj.Name)
	default:
		seen[obj.Name] = true
	}
}
