//go:build integration

package sdk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// runFloor is BenchmarkFleet's floor (FLEET_MODES=floor): no hub, only
// the informers any controller serving the same graphs on the same
// clusters needs, each with one handler, over one shared HTTP client. Per
// cluster: one informer of each graph's instance kind in the cluster's
// namespace, and one of ConfigMap (the child kind) metadata there. It
// reports the time until they have all synced and the memory they take,
// as the hub's figures are reported: what one machine and one API server
// cannot do faster or in less, whatever the hub does.
func runFloor(b *testing.B, n, graphs int) {
	fleet, c, names := startFleetNamespaces(b, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gvrs := installFleetCRDs(b, c, graphs)
	base := measure(b)

	httpClient, err := rest.HTTPClientFor(fleet.Hub.Config)
	require.NoError(b, err)
	dyn, err := dynamic.NewForConfigAndClient(fleet.Hub.Config, httpClient)
	require.NoError(b, err)
	meta, err := metadata.NewForConfigAndClient(fleet.Hub.Config, httpClient)
	require.NoError(b, err)
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	var informers []toolscache.SharedIndexInformer
	start := time.Now()
	for _, ns := range names {
		for _, gvr := range gvrs {
			informers = append(informers, dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, ns, 0, toolscache.Indexers{}, nil).Informer())
		}
		informers = append(informers,
			metadatainformer.NewFilteredMetadataInformer(meta, configMaps, ns, 0, toolscache.Indexers{}, nil).Informer())
	}
	for _, inf := range informers {
		_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		require.NoError(b, err)
		go inf.RunWithContext(ctx)
	}
	synced := waitFor(b, "every informer synced", 20*time.Millisecond, func() {}, func() (bool, string) {
		done := 0
		for _, inf := range informers {
			if inf.HasSynced() {
				done++
			}
		}
		return done == len(informers), fmt.Sprintf("%d of %d informers synced", done, len(informers))
	})
	after := settle(b)
	report(b, "floor", n, graphs, synced.Sub(start), 0, base, after)
}

// installFleetCRDs installs the CRDs of BenchmarkFleet's graphs, as the
// hub would, and returns their resources once they are served.
func installFleetCRDs(b *testing.B, c client.Client, graphs int) []schema.GroupVersionResource {
	ctx := context.Background()
	var gvrs []schema.GroupVersionResource
	for i := range graphs {
		g, err := graph.Compile(oneConfigMapRGD(b, fmt.Sprintf("FleetBench%d", i)), graph.Options{})
		require.NoError(b, err)
		require.NoError(b, c.Create(ctx, g.CRD))
		gvrs = append(gvrs, schema.GroupVersionResource{Group: g.CRD.Spec.Group, Version: g.Instance.GVK.Version, Resource: g.CRD.Spec.Names.Plural})
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
	return gvrs
}
