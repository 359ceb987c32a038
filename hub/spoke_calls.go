package hub

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Every request the fan-out sends to a cluster is bounded
// (Options.RequestTimeout): a cluster whose API server stopped answering
// (paused, behind a proxy that hangs, its network gone) would otherwise
// hold an attempt for as long as the TCP stack lets the connection live,
// and the graph would wait on it that long. The prober says Unreachable
// within its own bound; the bound here only ends the attempt, which is
// retried with backoff.

// servedKinds asks cl's discovery, live, which kinds it serves in gv; a
// group version it does not serve has none. ctx bounds the request.
func servedKinds(ctx context.Context, cl cluster.Cluster, gv schema.GroupVersion) (map[string]bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	list := &metav1.APIResourceList{}
	err = dc.RESTClient().Get().AbsPath(path).Do(ctx).Into(list)
	served := map[string]bool{}
	switch {
	case apierrors.IsNotFound(err):
		return served, nil
	case err != nil:
		return nil, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		served[r.Kind] = true
	}
	return served, nil
}
