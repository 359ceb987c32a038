package testing_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Fake clusters for unit tests: add them to a FakeProvider, give the
// provider to a multicluster manager, remove them to disengage.
func ExampleNewFakeProvider() {
	ctx := context.Background()
	provider := fgtesting.NewFakeProvider()
	eu, err := provider.AddCluster(ctx, "eu", fgtesting.FakeClusterOptions{})
	if err != nil {
		panic(err)
	}
	// What a test writes through a fake cluster's client, controllers
	// engaged with it see through its informers.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}}
	if err := eu.GetClient().Create(ctx, cm); err != nil {
		panic(err)
	}
	list := &corev1.ConfigMapList{}
	if err := eu.GetClient().List(ctx, list); err != nil {
		panic(err)
	}
	fmt.Println(len(list.Items), list.Items[0].Name)
	provider.Remove("eu") // cancels eu's engagement, as a real provider would
	// Output: 1 hello
}

// A real local fleet outside `go test`, as the quickstart uses it. In tests,
// StartFleet(t, 2) does the same and stops the fleet on cleanup.
func ExampleNewFleet() {
	fleet, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		panic(err) // fgtesting.ErrAssetsMissing says how to build the binaries
	}
	defer func() { _ = fleet.Stop() }()

	provider, err := fleet.NewProvider(context.Background())
	if err != nil {
		panic(err)
	}
	_ = provider // give it to mcmanager.New(fleet.Hub.Config, provider, ...)
	for _, s := range fleet.Spokes() {
		fmt.Println(s.Name, s.Config.Host != "")
	}
}
