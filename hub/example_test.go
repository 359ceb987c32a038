package hub_test

import (
	"context"
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/hub"
)

// A platform that runs kro (or its own operators) inside every cluster
// fans the CRDs out from one place and reads where each stands, without
// fleetgraph's instance runtime. provider is any multicluster-runtime
// provider (providers/secret, providers/kcp, your own); crd is the CRD to
// serve, labelled app.kubernetes.io/managed-by=fleetgraph.
func ExampleFanOut() {
	var provider multicluster.Provider
	var crd *apiextensionsv1.CustomResourceDefinition

	mgr, err := mcmanager.New(ctrl.GetConfigOrDie(), provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	fanOut := hub.New(hub.Options{})
	if err := mgr.Add(fanOut); err != nil { // engaged with every cluster
		panic(err)
	}
	if err := mgr.Add(hub.NewProber(fanOut, hub.ProberOptions{})); err != nil {
		panic(err)
	}
	fanOut.Serve(hub.Graph{
		Name: "webapp",
		CRD:  crd,
		// Its instances make Deployments: a cluster must serve them.
		Kinds: []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}},
	})
	go func() { _ = mgr.Start(context.Background()) }()

	for _, c := range fanOut.Status("webapp").Clusters {
		fmt.Println(c.Cluster, c.CRD, c.Message) // e.g. "prod-eu Established"
	}
}

// A provider asserts the hub's optional interfaces without importing the
// rest of fleetgraph.
func ExampleClusterLabeler() {
	var _ hub.ClusterLabeler = labelledProvider{}
}

type labelledProvider struct{}

func (labelledProvider) Labels(name multicluster.ClusterName) map[string]string {
	return map[string]string{"region": "eu"}
}

// Something other than a FanOut applies a CRD on one cluster (fleetgraph's
// hub graphs apply theirs on the hub) and wants its new instances stamped
// at admission as a FanOut's are: once the CRD is Established, Activate
// binds the policy in the background, only once a probe shows the API
// server can run it; Remove takes it off and stops any binding on its way.
// cl is that cluster (a manager is one); adm holds the policy, its binding
// and the probe (fleetgraph makes its own from each compiled graph).
func ExampleAdmissions() {
	var cl cluster.Cluster
	var adm *hub.Admission
	ctx := context.Background()

	admissions := hub.NewAdmissions(hub.Options{})
	local := hub.Cluster{Name: "", Cluster: cl}
	admissions.Activate(ctx, local, "webapp", adm)
	// ... later, when the graph goes:
	if err := admissions.Remove(ctx, local, "webapp", adm); err != nil {
		fmt.Println("retry:", err)
	}
}

// A platform's own multicluster-runtime provider gives the hub its
// clusters; the platform's inventory (here a map it keeps up to date) gives
// their labels, which placement, rollout waves, cluster.labels and
// fleet.clusters select by. Relabelled makes graphs follow a change at
// once.
func ExampleLabelsFrom() {
	var platformProvider multicluster.Provider // the platform's own provider
	var mu sync.Mutex
	inventory := map[multicluster.ClusterName]map[string]string{
		"eu-1": {"region": "eu", "tier": "prod"},
	}
	provider := hub.LabelsFrom(platformProvider, func(name multicluster.ClusterName) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return inventory[name] // from memory: called often
	})

	// Give provider, not platformProvider, to the manager and to the hub
	// (sdk.NewHub(provider, sdk.Options{...})).
	mgr, err := mcmanager.New(ctrl.GetConfigOrDie(), provider, manager.Options{})
	if err != nil {
		panic(err)
	}
	_ = mgr

	// Later, the inventory says eu-1 is a staging cluster now.
	mu.Lock()
	inventory["eu-1"] = map[string]string{"region": "eu", "tier": "staging"}
	mu.Unlock()
	provider.Relabelled("eu-1")
}
