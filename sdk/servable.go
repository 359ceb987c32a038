package sdk

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file answers "can a client create instances of this graph on that
// cluster right now?". FleetStatus saying Established is not enough: the API
// server's discovery lags the CRD by about 2 seconds, so a client that maps
// kinds through discovery is refused meanwhile. A cluster is servable for a
// graph when:
//   - the CRD of the graph's latest version is Established there and that
//     version serves the cluster (the runtime watches its instances), and
//   - a server-side dry-run create of an instance, through the cluster's
//     discovery-backed client, reaches the API server and passes admission
//     (an answer that the object is invalid or exists counts: the kind is
//     served). This also covers the admission policy, which is bound only
//     once the API server can run it (hub/admission_activate.go):
//     until then the runtime stamps new instances itself, so creates
//     succeed either way.

// servablePoll is how often WaitServable and Subscribe look again.
const servablePoll = 100 * time.Millisecond

// servableProbeName names the dry-run instance; dry-run creates store nothing.
const servableProbeName = "fleetgraph-servable-probe"

// ErrNotServable is what WaitServable's error wraps when ctx ends first.
var ErrNotServable = errors.New("fleetgraph: graph not servable")

// ServableEvent says that a graph became servable on a cluster, or stopped
// being.
type ServableEvent struct {
	// Graph and Cluster name the pair ("" is the manager's own cluster in
	// single-cluster mode).
	Graph, Cluster string
	// Servable reports whether clients can create instances of the graph's
	// latest version there now.
	Servable bool
	// Generation is the graph version (RGD generation; 0 for a graph
	// registered from Go) that became servable; 0 when Servable is false.
	Generation int64
}

// WaitServable returns once clients can create instances of the named
// graph's latest version on the named cluster: its CRD is established and
// in discovery, the runtime watches its instances and the API server admits
// creates. The graph need not be registered yet. When ctx ends first it
// returns an error wrapping ErrNotServable and ctx's error, saying why the
// cluster is not servable yet.
func (h *Hub) WaitServable(ctx context.Context, graph, cluster string) error {
	t := time.NewTicker(servablePoll)
	defer t.Stop()
	for {
		_, why := h.servable.servable(ctx, graph, cluster)
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: graph %q on cluster %q: %s: %w", ErrNotServable, graph, cluster, why, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Subscribe returns a channel of ServableEvents for every graph and
// cluster: first one with Servable true for each pair servable now, then one
// each time a pair becomes servable (again, or at a new generation) or
// stops being (the graph is updated or removed, the cluster leaves or its
// CRD fails). The channel is closed when ctx ends or the Hub's manager
// stops. Receive promptly: events are not dropped, so a subscriber that
// stops receiving holds up its own subscription (no other).
func (h *Hub) Subscribe(ctx context.Context) <-chan ServableEvent {
	out := make(chan ServableEvent, 16)
	go h.servable.watch(ctx, out)
	return out
}

// servability answers WaitServable and Subscribe from the fleet status and
// a dry-run create on the cluster; it keeps no state (a subscription's is
// its own).
type servability struct{ h *Hub }

// watch sends the changes of what is servable to out until ctx or the
// Hub's manager ends.
func (s *servability) watch(ctx context.Context, out chan<- ServableEvent) {
	h := s.h
	defer close(out)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	known := map[[2]string]int64{} // servable pairs, with the generation
	t := time.NewTicker(servablePoll)
	defer t.Stop()
	for {
		for _, ev := range s.changes(ctx, known) {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// changes updates known, the pairs servable so far, and returns the
// events that tell the difference.
func (s *servability) changes(ctx context.Context, known map[[2]string]int64) []ServableEvent {
	h := s.h
	var events []ServableEvent
	seen := map[[2]string]bool{}
	for _, graph := range h.Graphs() {
		for _, c := range h.observed(graph).Clusters {
			key := [2]string{graph, c.Cluster}
			seen[key] = true
			gen, was := known[key]
			if was && gen == c.Generation && latestServes(c) {
				continue // servable already; checked cheaply
			}
			gen, why := s.status(ctx, graph, &c)
			is := why == ""
			if is == was && (!is || gen == known[key]) {
				continue
			}
			if is {
				known[key] = gen
			} else {
				delete(known, key)
				gen = 0
			}
			events = append(events, ServableEvent{Graph: graph, Cluster: c.Cluster, Servable: is, Generation: gen})
		}
	}
	for key := range known {
		if !seen[key] {
			delete(known, key)
			events = append(events, ServableEvent{Graph: key[0], Cluster: key[1]})
		}
	}
	return events
}

// latestServes reports whether the graph's latest version is established
// and serving on the cluster c describes.
func latestServes(c ClusterStatus) bool {
	return c.CRD == CRDEstablished && c.Serving && c.ServedGeneration == c.Generation
}

// servable returns the generation of graph that is servable on cluster, or
// why it is not ("" when it is).
func (s *servability) servable(ctx context.Context, graph, cluster string) (int64, string) {
	var status *ClusterStatus
	for _, c := range s.h.observed(graph).Clusters {
		if c.Cluster == cluster {
			status = &c
		}
	}
	return s.status(ctx, graph, status)
}

// status is servable for the cluster whose fleet status is status
// (nil: not listed), read already: a subscription asks it for every
// cluster of a graph from one FleetStatus.
func (s *servability) status(ctx context.Context, graph string, status *ClusterStatus) (int64, string) {
	switch {
	case status == nil:
		return 0, "the graph is not registered or the cluster not engaged"
	case !latestServes(*status):
		why := fmt.Sprintf("CRD %s, serving generation %d of %d", status.CRD, status.ServedGeneration, status.Generation)
		if status.Message != "" {
			why += ": " + status.Message
		}
		return 0, why
	}
	if err := s.dryRunCreate(ctx, graph, status.Cluster); err != nil {
		return 0, err.Error()
	}
	return status.Generation, ""
}

// dryRunCreate sends a dry-run create of an empty instance of graph to
// cluster through the cluster's client, which maps the kind by discovery.
func (s *servability) dryRunCreate(ctx context.Context, graph, cluster string) error {
	reg, e := s.h.lookup(graph), s.h.cluster(cluster)
	if reg == nil || e == nil {
		return errors.New("the graph is not registered or the cluster not engaged")
	}
	g := reg.graph
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(g.Instance.GVK)
	u.SetName(servableProbeName)
	if g.CRD.Spec.Scope == apiextensionsv1.NamespaceScoped {
		u.SetNamespace("default")
	}
	err := e.cl.GetClient().Create(ctx, u, client.DryRunAll)
	if err == nil || apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err) || noNamespace(err) {
		return nil
	}
	if !errors.As(err, new(apierrors.APIStatus)) {
		// No answer (a timeout, a connection error): nothing was refused.
		return fmt.Errorf("a dry-run create got no answer: %w", err)
	}
	return fmt.Errorf("a dry-run create is refused: %w", err)
}

// noNamespace reports whether err says the probe's namespace does not
// exist: the API server served the kind and got as far as the namespace.
func noNamespace(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}
