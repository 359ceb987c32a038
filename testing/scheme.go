package testing

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// NewScheme returns a new scheme with client-go's built-in types,
// apiextensions/v1, the ResourceGraphDefinition types, fleetgraph's own
// hub types (GraphRevision, GraphRollout) and the cluster inventory API's
// (ClusterProfile, PlacementDecision). Give it to test
// clients (client.Options{Scheme: fgtesting.NewScheme()}) rather than adding
// types to client-go's global scheme, which a running manager may be reading.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(fgv1alpha1.AddToScheme(s))
	utilruntime.Must(ciav1alpha1.AddToScheme(s))
	return s
}
