package kcp

import (
	"context"
	"fmt"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/lazycluster"
)

// WorkspacesResource is kcp's Workspace resource, watched in unstructured
// form so that the SDK does not depend on kcp's API module.
var WorkspacesResource = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// WorkspacePhaseReady is the phase in which a workspace is engaged.
const WorkspacePhaseReady = "Ready"

// watcher is an informer on the Workspaces of one workspace.
type watcher struct {
	informer toolscache.SharedIndexInformer
	cancel   context.CancelFunc
	done     chan struct{}
}

// watch starts an informer on the Workspaces in path, unless one runs.
func (p *Provider) watch(path logicalcluster.Path) error {
	p.lock.Lock()
	defer p.lock.Unlock()
	if _, ok := p.watchers[path.String()]; ok {
		return nil
	}
	dc, err := dynamic.NewForConfig(p.configFor(path))
	if err != nil {
		return fmt.Errorf("watching workspaces in %s: %w", path, err)
	}
	informer := dynamicinformer.NewFilteredDynamicInformer(dc, WorkspacesResource, metav1.NamespaceAll, 0,
		toolscache.Indexers{}, nil).Informer()
	enqueue := func(obj any) {
		if key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(workspaceKey{parent: path.String(), name: key})
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("watching workspaces in %s: %w", path, err)
	}
	ctx, cancel := context.WithCancel(p.ctx)
	w := &watcher{informer: informer, cancel: cancel, done: make(chan struct{})}
	p.watchers[path.String()] = w
	go func() {
		defer close(w.done)
		informer.RunWithContext(ctx)
	}()
	p.log.V(1).Info("Watching workspaces", "path", path.String())
	return nil
}

// unwatch stops the informer on the Workspaces in path, if any.
func (p *Provider) unwatch(path logicalcluster.Path) {
	p.lock.Lock()
	w, ok := p.watchers[path.String()]
	delete(p.watchers, path.String())
	p.lock.Unlock()
	if ok {
		w.cancel()
		<-w.done
	}
}

func (p *Provider) stopWatchers() {
	p.lock.RLock()
	paths := make([]string, 0, len(p.watchers))
	for path := range p.watchers {
		paths = append(paths, path)
	}
	p.lock.RUnlock()
	for _, path := range paths {
		p.unwatch(logicalcluster.NewPath(path))
	}
}

func (p *Provider) processNext() bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	if err := p.sync(key); err != nil {
		p.log.Error(err, "Engaging workspace failed; retrying", "path", key.path().String())
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// sync engages or disengages the workspace named by key.
func (p *Provider) sync(key workspaceKey) error {
	ws := p.workspace(key)
	if ws == nil || ws.GetDeletionTimestamp() != nil {
		p.disengage(key)
		return nil
	}
	phase, _, _ := unstructured.NestedString(ws.Object, "status", "phase")
	name, _, _ := unstructured.NestedString(ws.Object, "spec", "cluster")
	if phase != WorkspacePhaseReady || name == "" {
		return nil // engaged once Ready; a Ready workspace stays engaged
	}
	return p.engage(key, logicalcluster.Name(name))
}

// workspace returns the Workspace named by key from its parent's informer,
// or nil when it (or the parent's watch) is gone.
func (p *Provider) workspace(key workspaceKey) *unstructured.Unstructured {
	p.lock.RLock()
	w, ok := p.watchers[key.parent]
	p.lock.RUnlock()
	if !ok {
		return nil
	}
	obj, exists, err := w.informer.GetStore().GetByKey(key.name)
	if err != nil || !exists {
		return nil
	}
	ws, _ := obj.(*unstructured.Unstructured)
	return ws
}

func (p *Provider) engage(key workspaceKey, name logicalcluster.Name) error {
	if !p.record(key, name) {
		return nil // already engaged
	}
	cl, err := lazycluster.New(p.configFor(name.Path()), append([]cluster.Option{cacheopts.ReportWatchErrors}, p.opts.ClusterOptions...)...)
	if err == nil {
		err = p.clusters.Add(p.ctx, multicluster.ClusterName(name), cl, p.aware)
	}
	if err != nil {
		p.forget(key)
		return fmt.Errorf("engaging workspace %s (%s): %w", key.path(), name, err)
	}
	p.log.Info("Engaged workspace", "path", key.path().String(), "cluster", name.String())
	if p.opts.Recursive {
		if err := p.watch(key.path()); err != nil {
			return err
		}
	}
	if p.workspace(key) == nil { // the parent went away meanwhile
		p.disengage(key)
	}
	return nil
}

// record notes that key is being engaged as name; false if it already is.
func (p *Provider) record(key workspaceKey, name logicalcluster.Name) bool {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.engaged[key] == name {
		return false
	}
	p.engaged[key] = name
	p.paths[name] = key.path()
	return true
}

// forget drops key's record and returns the name it was engaged as.
func (p *Provider) forget(key workspaceKey) (logicalcluster.Name, bool) {
	p.lock.Lock()
	defer p.lock.Unlock()
	name, ok := p.engaged[key]
	delete(p.engaged, key)
	delete(p.paths, name)
	return name, ok
}

// disengage cancels the engagement of the workspace named by key and, with
// Recursive, of its whole subtree.
func (p *Provider) disengage(key workspaceKey) {
	name, ok := p.forget(key)
	if !ok {
		return
	}
	p.clusters.Remove(multicluster.ClusterName(name))
	p.log.Info("Disengaged workspace", "path", key.path().String(), "cluster", name.String())
	if !p.opts.Recursive {
		return
	}
	p.unwatch(key.path())
	for _, child := range p.childrenOf(key.path()) {
		p.disengage(child)
	}
}

func (p *Provider) childrenOf(path logicalcluster.Path) []workspaceKey {
	p.lock.RLock()
	defer p.lock.RUnlock()
	var children []workspaceKey
	for key := range p.engaged {
		if key.parent == path.String() {
			children = append(children, key)
		}
	}
	return children
}
