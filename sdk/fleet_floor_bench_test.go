//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
	"github.com/fleetgraph/fleetgraph/spoke"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// runFloor is BenchmarkFleet's floor (FLEET_MODES=floor): no hub, only
// what any controller serving the same graphs on the same clusters must
// do, from the same start: install each graph's CRD (create, wait until
// established); per cluster, run one informer of each graph's instance
// kind in the cluster's namespace and one of ConfigMap (the child kind)
// metadata there, each with one handler, over one shared HTTP client with
// no rate limit; and reconcile each instance the informers deliver with
// one server-side apply of its ConfigMap and one status write (ACTIVE),
// spoke.DefaultWorkers per graph at a time. The instances are created by
// the same client as in the hub's runs. It reports when every informer had
// synced (as s-attached) and when, besides, every instance was ACTIVE
// (s-served), and the memory the informers and their caches take, as the
// hub's figures are reported: what one machine and one API server cannot
// do faster or in less, whatever the hub does. It reads nothing else,
// keeps no status beyond ACTIVE, checks no schema and stamps no finalizer.
// It returns the process's footprint before the clock and after settling.
func runFloor(b *testing.B, n, graphs int) (base, after usage) {
	fleet, c, names := startFleetNamespaces(b, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := fgtesting.NoRateLimit(fleet.Hub.Config)
	base = settle(b)

	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(b, err)
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	require.NoError(b, err)
	meta, err := metadata.NewForConfigAndClient(cfg, httpClient)
	require.NoError(b, err)
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	start := time.Now()
	gvrs, kinds := installFleetCRDs(b, c, graphs)
	go createFleetInstances(ctx, c, kinds, names)
	floor := newFloorReconciler(dyn)
	var informers []toolscache.SharedIndexInformer
	for _, ns := range names {
		for _, gvr := range gvrs {
			inf := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, ns, 0, toolscache.Indexers{}, nil).Informer()
			_, err := inf.AddEventHandler(floor.handler(gvr))
			require.NoError(b, err)
			informers = append(informers, inf)
		}
		inf := metadatainformer.NewFilteredMetadataInformer(meta, configMaps, ns, 0, toolscache.Indexers{}, nil).Informer()
		_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		require.NoError(b, err)
		informers = append(informers, inf)
	}
	for _, inf := range informers {
		go inf.RunWithContext(ctx)
	}
	floor.start(ctx, spoke.DefaultWorkers*graphs)
	defer floor.stop()
	synced := waitFor(b, "every informer synced", 20*time.Millisecond, func() {}, func() (bool, string) {
		done := 0
		for _, inf := range informers {
			if inf.HasSynced() {
				done++
			}
		}
		return done == len(informers), fmt.Sprintf("%d of %d informers synced", done, len(informers))
	})
	served := waitFor(b, "every instance ACTIVE", 500*time.Millisecond, func() {}, func() (bool, string) {
		got := countActiveAll(ctx, c, kinds)
		return got == n*graphs, fmt.Sprintf("%d of %d instances ACTIVE", got, n*graphs)
	})
	after = settle(b)
	if floor.failed.Load() > 0 {
		b.Logf("floor reconciles: %s", floor.failures())
	}
	report(b, "floor", n, graphs, synced.Sub(start), served.Sub(start), base, after)
	return base, after
}

// floorReconciler is the floor's controller: a queue of instances and
// workers that write each one's ConfigMap and status once.
type floorReconciler struct {
	dyn   dynamic.Interface
	queue workqueue.TypedRateLimitingInterface[floorKey]
	wg    sync.WaitGroup
	// suffix, when set, names each ConfigMap after its instance plus
	// suffix, and the instance's status is left alone: BenchmarkScale's
	// takeover floor writes beside a running hub and must not touch what
	// the hub owns.
	suffix string
	// applied counts the ConfigMaps written; failed the reconciles that
	// failed (and were retried), lastErr the last one's error.
	applied, failed atomic.Int64
	lastErr         atomic.Value
}

type floorKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

func (f *floorReconciler) handler(gvr schema.GroupVersionResource) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			f.queue.Add(floorKey{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()})
		}
	}}
}

// newFloorReconciler retries a failed reconcile with the per-request
// backoff the hub's runtime has (internal/fair: 5 ms doubling to 1,000 s),
// and no bucket shared by all requests: client-go's default controller
// limiter adds one of 10 retries a second for the whole queue, which the
// hub does not have, and which alone held a floor of 2,549 clusters whose
// first applies failed under load to 10 applies a second.
func newFloorReconciler(dyn dynamic.Interface) *floorReconciler {
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[floorKey](5*time.Millisecond, 1000*time.Second)
	return &floorReconciler{dyn: dyn, queue: workqueue.NewTypedRateLimitingQueue(limiter)}
}

// start runs workers until stop.
func (f *floorReconciler) start(ctx context.Context, workers int) {
	for range workers {
		f.wg.Go(func() {
			for {
				key, shutdown := f.queue.Get()
				if shutdown {
					return
				}
				if err := f.reconcile(ctx, key); err != nil && ctx.Err() == nil {
					f.failed.Add(1)
					f.lastErr.Store(err.Error())
					f.queue.AddRateLimited(key)
				} else {
					f.queue.Forget(key)
				}
				f.queue.Done(key)
			}
		})
	}
}

// failures says how many reconciles failed, and the last error.
func (f *floorReconciler) failures() string {
	n := f.failed.Load()
	if n == 0 {
		return "none failed"
	}
	return fmt.Sprintf("%d failed and were retried, the last with: %v", n, f.lastErr.Load())
}

func (f *floorReconciler) stop() {
	f.queue.ShutDown()
	f.wg.Wait()
}

// reconcile applies the instance's ConfigMap, as the graph renders it, and
// writes its status ACTIVE.
func (f *floorReconciler) reconcile(ctx context.Context, key floorKey) error {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": key.name + f.suffix, "namespace": key.namespace},
		"data":     map[string]any{"size": "1", "generation": "0"},
	}}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := f.dyn.Resource(configMaps).Namespace(key.namespace).Apply(ctx, key.name+f.suffix, cm,
		metav1.ApplyOptions{FieldManager: "floor", Force: true}); err != nil {
		return err
	}
	f.applied.Add(1)
	if f.suffix != "" {
		return nil
	}
	_, err := f.dyn.Resource(key.gvr).Namespace(key.namespace).Patch(ctx, key.name, types.MergePatchType,
		[]byte(`{"status":{"state":"ACTIVE"}}`), metav1.PatchOptions{FieldManager: "floor"}, "status")
	return err
}

// installFleetCRDs installs the CRDs of BenchmarkFleet's graphs, as the
// hub would, and returns their resources and kinds once they are
// established.
func installFleetCRDs(b *testing.B, c client.Client, graphs int) ([]schema.GroupVersionResource, []schema.GroupVersionKind) {
	ctx := context.Background()
	var gvrs []schema.GroupVersionResource
	var kinds []schema.GroupVersionKind
	for i := range graphs {
		g, err := graph.Compile(oneConfigMapRGD(b, fmt.Sprintf("FleetBench%d", i)), graph.Options{})
		require.NoError(b, err)
		require.NoError(b, c.Create(ctx, g.CRD))
		gvrs = append(gvrs, schema.GroupVersionResource{Group: g.CRD.Spec.Group, Version: g.Instance.GVK.Version, Resource: g.CRD.Spec.Names.Plural})
		kinds = append(kinds, g.Instance.GVK)
		waitFor(b, "CRD established", 20*time.Millisecond, func() {}, func() (bool, string) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(g.CRD), crd); err != nil {
				return false, err.Error()
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, ""
				}
			}
			return false, "not established"
		})
	}
	return gvrs, kinds
}
