package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/steps"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// This file shares an attempt's work among the clusters behind one API server
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

// maxSharedChecks bounds the entries kept; all are dropped when it is
// reached (old graph versions fall out that way).
const maxSharedChecks = 4096

// sharedChecks holds, per server and graph, the last full check and the
// flight in progress. The zero value is ready to use.
type sharedChecks struct {
	mu      sync.Mutex
	entries map[sharedKey]*sharedEntry
}

// sharedKey is one graph's CRD, as applied with one revision label, on one
// server. The CRD object's identity stands for its spec: a new spec is a
// new object (see Graph.CRD).
type sharedKey struct {
	server   string
	crd      *apiextensionsv1.CustomResourceDefinition
	revision int64
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
func (f *FanOut) ensureShared(ctx context.Context, c Cluster, g Graph) error {
	server, ok := serverKey(c.Cluster.GetConfig())
	if !ok || f.opts.SharedCheckTTL < 0 {
		_, err := f.ensure(ctx, c, g)
		return clusterError(c.Name, err)
	}
	key := sharedKey{server: server, crd: g.CRD, revision: g.Revision}
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
			return clusterError(c.Name, fl.err)
		}
		crd, ranFull, err := f.runFlight(ctx, c, g, key, full)
		f.shared.land(key, fl, crd, ranFull, err, ctx.Err() != nil)
		return clusterError(c.Name, err)
	}
}

// runFlight confirms the standing check, or runs the whole Ensure when
// there is none (full) or the CRD is no longer the one it established. It
// reports whether it ran the whole Ensure.
func (f *FanOut) runFlight(ctx context.Context, c Cluster, g Graph, key sharedKey, full bool) (establishedCRD, bool, error) {
	if !full {
		clock := steps.Start(ctx, g.Name, c.Name)
		want := f.shared.standing(key)
		reqCtx, cancel := f.request(ctx)
		same, err := sameCRD(reqCtx, c.Cluster, g, want)
		cancel()
		if err != nil {
			return establishedCRD{}, false, err
		}
		clock.Lap(steps.Confirm)
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

// drop forgets the standing checks of the CRD of that name on server, so
// that the next Ensure of a cluster there runs the whole Ensure again
// (repair.go: something it established there went away).
func (s *sharedChecks) drop(server, crdName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, e := range s.entries {
		if key.server == server && key.crd.Name == crdName {
			e.crd, e.checked = establishedCRD{}, time.Time{}
		}
	}
}

// sameCRD reports whether g's CRD on cl is still want: same UID and
// generation (so the same, established, spec), ours, and labelled with g's
// revision. It reads the metadata only.
func sameCRD(ctx context.Context, cl cluster.Cluster, g Graph, want establishedCRD) (bool, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	err := cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: g.CRD.Name}, meta)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return meta.UID == want.uid && meta.Generation == want.generation &&
		meta.Labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedByFleetgraph &&
		meta.Labels[fgv1alpha1.LabelGraphRevision] == revisionLabel(g.Revision), nil
}

// clusterError names the cluster in a shared, cluster-free error of an
// attempt: a Graph's Check.
func clusterError(clusterName string, err error) error {
	var check *checkFailure
	if errors.As(err, &check) {
		return fmt.Errorf("cluster %q: %w", clusterName, check.err)
	}
	return err
}
