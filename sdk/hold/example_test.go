package hold_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/hold"
)

// Holding is a pure edit of the GraphRollout read: a cluster the rollout
// places is added to spec.holds, one it does not place is refused.
func ExampleClusters() {
	ro := &fgv1alpha1.GraphRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp"},
		Status:     fgv1alpha1.GraphRolloutStatus{Clusters: []fgv1alpha1.RolloutCluster{{Name: "eu-1"}, {Name: "eu-2"}}},
	}
	holds, changed, err := hold.Clusters(ro, []string{"eu-1"}, "customer freeze")
	fmt.Println(holds, changed, err)
	_, _, err = hold.Clusters(ro, []string{"eu-9"}, "typo")
	fmt.Println(err)
	// Output:
	// [{[eu-1] nil customer freeze}] true <nil>
	// cluster "eu-9" in GraphRollout webapp: the rollout places no such cluster (it places eu-1, eu-2)
}

// A platform's own tool holds a cluster as the hub and the fleetgraph
// command do: Edit reads the GraphRollout, asks the edit, and patches
// spec.holds as FieldManager, again on a conflict.
func ExampleEdit() {
	var c client.Client // a client of the hub cluster
	find := func(ctx context.Context) (*fgv1alpha1.GraphRollout, error) {
		ro := &fgv1alpha1.GraphRollout{}
		return ro, c.Get(ctx, client.ObjectKey{Name: "webapp"}, ro)
	}
	err := hold.Edit(context.Background(), c, find, func(ro *fgv1alpha1.GraphRollout) ([]fgv1alpha1.Hold, bool, error) {
		return hold.Clusters(ro, []string{"eu-1"}, "customer freeze")
	})
	_ = err
}
