package hub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// This file shares Ensure's work among the clusters behind one API server
// and identity (server_key.go). The first of them runs the whole Ensure;
// clusters that ask while it runs take its outcome. Afterwards, for
// SharedCheckTTL, a cluster of the same server only confirms, with one
// metadata read of the CRD (shared too among the clusters that ask at the
// same time), that the CRD is still the one the full check established:
// same UID, same generation, still ours, still from the same revision. Any
// difference, a failure, or an older check runs the whole Ensure again, so
// a CRD deleted, taken over or changed by someone else is noticed by the
// next cluster that asks, as without sharing.
//
// Only the outcome is shared, never a message naming another cluster: a
// shared error is made cluster-free and named for each caller
// (clusterError). The admission policy is activated by the cluster that
// ran the whole Ensure: the policy objects are cluster-scoped, one set per
// server.

// DefaultSharedCheckTTL is how long a full check stands for the other
// clusters of its server.
const DefaultSharedCheckTTL = 30 * time.Second

// maxSharedChecks bounds the entries kept; all are dropped when it is
// reached (old graph versions fall out that way).
const maxSharedChecks = 4096

// sharedChecks holds, per server and graph, the last full check and the
// flight in progress. The zero value is ready to use.
type sharedChecks struct {
	mu      sync.Mutex
	entries map[sharedKey]*sharedEntry
}

type sharedKey struct {
	server string
	g      *graph.Graph
}

// sharedEntry is one graph on one server.
type sharedEntry struct {
	// crd is the CRD the last full check established; zero when there is
	// none standing.
	crd     establishedCRD
	checked time.Time
	// flight is the check in progress, if any.
	flight *flight
}

// establishedCRD names the version of a CRD that a full check saw
// established.
type establishedCRD struct {
	uid        types.UID
	generation int64
}

// flight is one check whose outcome its waiters share.
type flight struct {
	done chan struct{}
	err  error
	// abandoned: the check ended because its own caller went away; the
	// waiters ask again instead of taking that outcome.
	abandoned bool
}

// ensureShared runs Ensure's work for c and g, shared with the other
// clusters of c's server. Clusters with no server key run it on their own.
func (f *FanOut) ensureShared(ctx context.Context, c Cluster, g *graph.Graph) error {
	server, ok := serverKey(c.Cluster.GetConfig())
	if !ok || f.opts.SharedCheckTTL < 0 {
		_, err := f.ensure(ctx, c, g)
		return clusterError(c.Name, g, err)
	}
	key := sharedKey{server: server, g: g}
	for {
		fl, lead, full := f.shared.join(key, f.opts.SharedCheckTTL)
		if !lead {
			select {
			case <-fl.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if fl.abandoned {
				continue
			}
			return clusterError(c.Name, g, fl.err)
		}
		crd, ranFull, err := f.runFlight(ctx, c, g, key, full)
		f.shared.land(key, fl, crd, ranFull, err, ctx.Err() != nil)
		return clusterError(c.Name, g, err)
	}
}

// runFlight confirms the standing check, or runs the whole Ensure when
// there is none (full) or the CRD is no longer the one it established. It
// reports whether it ran the whole Ensure.
func (f *FanOut) runFlight(ctx context.Context, c Cluster, g *graph.Graph, key sharedKey, full bool) (establishedCRD, bool, error) {
	if !full {
		clock := newStepClock(f.opts.OnStep, g.Name, c.Name)
		want := f.shared.standing(key)
		reqCtx, cancel := f.request(ctx)
		same, err := sameCRD(reqCtx, c.Cluster, g, want)
		cancel()
		if err != nil {
			return establishedCRD{}, false, err
		}
		clock.lap(StepConfirm)
		if same {
			return want, false, nil
		}
	}
	crd, err := f.ensure(ctx, c, g)
	return crd, true, err
}

// join returns the flight for key that the caller should wait for, or a
// new one it leads. full reports whether the leader must run the whole
// Ensure (no check stands, or it is older than ttl); otherwise it only
// confirms the standing one.
func (s *sharedChecks) join(key sharedKey, ttl time.Duration) (fl *flight, lead, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		if s.entries == nil || len(s.entries) >= maxSharedChecks {
			s.entries = map[sharedKey]*sharedEntry{}
		}
		e = &sharedEntry{}
		s.entries[key] = e
	}
	if e.flight != nil {
		return e.flight, false, false
	}
	e.flight = &flight{done: make(chan struct{})}
	full = e.crd == (establishedCRD{}) || time.Since(e.checked) > ttl
	return e.flight, true, full
}

// standing returns the CRD the last full check for key established.
func (s *sharedChecks) standing(key sharedKey) establishedCRD {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[key]; e != nil {
		return e.crd
	}
	return establishedCRD{}
}

// land ends fl with its outcome: a successful full check becomes the
// standing one; a failure drops it, so the next cluster runs the whole
// Ensure.
func (s *sharedChecks) land(key sharedKey, fl *flight, crd establishedCRD, full bool, err error, abandoned bool) {
	s.mu.Lock()
	if e := s.entries[key]; e != nil && e.flight == fl {
		e.flight = nil
		switch {
		case err != nil:
			e.crd, e.checked = establishedCRD{}, time.Time{}
		case full:
			e.crd, e.checked = crd, time.Now()
		}
	}
	s.mu.Unlock()
	fl.err, fl.abandoned = err, abandoned && err != nil
	close(fl.done)
}

// sameCRD reports whether g's CRD on cl is still want: same UID and
// generation (so the same, established, spec), ours, and labelled with g's
// revision. It reads the metadata only.
func sameCRD(ctx context.Context, cl cluster.Cluster, g *graph.Graph, want establishedCRD) (bool, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	err := cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: g.CRD.Name}, meta)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return meta.UID == want.uid && meta.Generation == want.generation &&
		meta.Labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedByFleetgraph &&
		meta.Labels[fgv1alpha1.LabelGraphRevision] == revisionLabel(g), nil
}

// revisionLabel is the revision label apply puts on g's CRD ("" for an
// unnumbered graph).
func revisionLabel(g *graph.Graph) string {
	if g.Revision > 0 {
		return strconv.FormatInt(g.Revision, 10)
	}
	return ""
}

// clusterError names the cluster in a shared, cluster-free error of
// Ensure: the spoke schemas' verdicts and read failures.
func clusterError(clusterName string, g *graph.Graph, err error) error {
	var incompatible *schemaDisagreement
	var unread *schemaUnread
	switch {
	case errors.As(err, &incompatible):
		return disagreement(clusterName, g, incompatible.err)
	case errors.As(err, &unread):
		return fmt.Errorf("reading the schemas of the graph's kinds on cluster %q: %w", clusterName, unread.err)
	}
	return err
}
