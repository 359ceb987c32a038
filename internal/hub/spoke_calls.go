package hub

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Every request the fan-out sends to a spoke is bounded: a spoke whose API
// server stopped answering (paused, behind a proxy that hangs, its network
// gone) would otherwise hold an Ensure for as long as the TCP stack lets
// the connection live, and the graph would wait on it that long. The
// prober says Unreachable within its own bound; the bound here only ends
// the attempt, which the runtime retries with backoff.

// DefaultRequestTimeout bounds each request the fan-out sends to a spoke.
const DefaultRequestTimeout = 15 * time.Second

// request returns ctx bounded to one request.
func (f *FanOut) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.opts.RequestTimeout)
}

// boundedHTTP returns a client of cl's transport whose requests end after
// timeout, for client-go clients whose calls take no context (OpenAPI).
func boundedHTTP(cl cluster.Cluster, timeout time.Duration) *http.Client {
	hc := *cl.GetHTTPClient()
	hc.Timeout = timeout
	return &hc
}

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
