package pull

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Availability is what the hub knows of an agent's heartbeat.
type Availability int

const (
	// AvailabilityUnknown: no renewal seen yet and the grace has not
	// passed, or the hub cannot read its own API server: the hub judges
	// nothing.
	AvailabilityUnknown Availability = iota
	// Available: a renewal was seen within the grace.
	Available
	// Unavailable: no renewal for longer than the grace while the hub
	// could read its API server.
	Unavailable
)

// contactProbe is how often, and how patiently, the Source checks that it
// can read its own API server: an agent is judged only while it can.
const (
	contactProbe        = time.Second
	contactProbeTimeout = 2 * time.Second
)

// heartbeats tracks the agents' Lease renewals by the hub's clock, and
// the hub's own contact with its API server.
type heartbeats struct {
	grace time.Duration

	mu sync.Mutex
	// contactSince is when the hub's current uninterrupted contact with
	// its API server began; zero while it has none.
	contactSince time.Time
	// lostSince is when the contact was lost; zero while there is one.
	lostSince time.Time
	byCluster map[string]*beat
}

type beat struct {
	renew     time.Time     // the Lease's renewTime, as last read
	firstSeen time.Time     // when the Lease was first read (hub clock)
	seenAt    time.Time     // when a renewal was last seen (hub clock); zero before the first
	grace     time.Duration // the cluster's own grace; 0: the hub's
	told      Availability  // the judgement last told (flipped)
}

func (h *heartbeats) get(cluster string) *beat {
	if h.byCluster == nil {
		h.byCluster = map[string]*beat{}
	}
	b := h.byCluster[cluster]
	if b == nil {
		b = &beat{}
		h.byCluster[cluster] = b
	}
	return b
}

// seen records that the cluster's Lease was read with renewTime renew, at
// now. A renewTime other than the last one read is a renewal; the first
// read of a Lease is not (a hub that starts reads old Leases).
func (h *heartbeats) seen(cluster string, renew, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.get(cluster)
	switch {
	case b.firstSeen.IsZero():
		b.firstSeen, b.renew = now, renew
	case !renew.Equal(b.renew):
		b.renew, b.seenAt = renew, now
	}
}

// setGrace sets the cluster's own grace (0: the hub's).
func (h *heartbeats) setGrace(cluster string, grace time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.get(cluster).grace = grace
}

func (h *heartbeats) forget(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byCluster, cluster)
	agentAvailable.DeleteLabelValues(cluster)
}

// judge says whether the cluster's agent is available at now, and how
// long ago its last renewal was seen (0 when none was).
func (h *heartbeats) judge(cluster string, now time.Time) (Availability, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.judgeLocked(cluster, now)
}

func (h *heartbeats) judgeLocked(cluster string, now time.Time) (Availability, time.Duration) {
	if h.contactSince.IsZero() {
		return AvailabilityUnknown, 0
	}
	b := h.get(cluster)
	grace := h.grace
	if b.grace > 0 {
		grace = b.grace
	}
	var age time.Duration
	if !b.seenAt.IsZero() {
		age = now.Sub(b.seenAt)
	}
	// The clock starts no earlier than the hub's contact with its API
	// server (renewals it could not read meanwhile are not the agent's
	// fault), nor than the first read of the Lease.
	from := latest(b.seenAt, b.firstSeen, h.contactSince)
	switch {
	case now.Sub(from) > grace:
		return Unavailable, age
	case b.seenAt.IsZero():
		return AvailabilityUnknown, 0
	}
	return Available, age
}

// flipped reports whether the cluster's judgement changed since it was
// last told, and records it as told.
func (h *heartbeats) flipped(cluster string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now, _ := h.judgeLocked(cluster, time.Now())
	b := h.get(cluster)
	if now == b.told {
		return false
	}
	b.told = now
	recordAvailability(cluster, now)
	return true
}

func (h *heartbeats) clusters() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.byCluster))
	for name := range h.byCluster {
		out = append(out, name)
	}
	return out
}

// probe checks every contactProbe that the hub's API server answers, and
// tells changed of every cluster (each judgement may flip with time)
// until ctx ends. When the server answers again after it did not for
// longer than refreshAfter, it calls regained (in a goroutine of its own,
// one at a time).
func (h *heartbeats) probe(ctx context.Context, cfg *rest.Config, log logr.Logger, changed func(cluster string), regained func()) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		log.Error(err, "no client to probe the hub's API server: agents are never judged unavailable")
		return
	}
	t := time.NewTicker(contactProbe)
	defer t.Stop()
	var refreshing sync.Mutex
	for {
		pctx, cancel := context.WithTimeout(ctx, contactProbeTimeout)
		err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(pctx).Error()
		cancel()
		if h.contact(err == nil, time.Now()) && refreshing.TryLock() {
			go func() {
				defer refreshing.Unlock()
				regained()
			}()
		}
		for _, name := range h.clusters() {
			changed(name)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshAfter is how long the hub's API server must have been out of
// reach for the Source to read it again into a new cache once it answers.
const refreshAfter = 10 * time.Second

// contact records whether the hub's API server answered at now, and
// reports whether it answers again after it did not for longer than
// refreshAfter.
func (h *heartbeats) contact(ok bool, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !ok && h.lostSince.IsZero():
		h.contactSince, h.lostSince = time.Time{}, now
	case !ok:
	case h.contactSince.IsZero():
		long := !h.lostSince.IsZero() && now.Sub(h.lostSince) > refreshAfter
		h.contactSince, h.lostSince = now, time.Time{}
		return long
	}
	return false
}

// describe says what the judgement means, for status messages.
func describe(a Availability, age, grace time.Duration) string {
	switch {
	case a == Unavailable && age == 0:
		return fmt.Sprintf("no heartbeat of the cluster's agent seen within %s", grace)
	case a == Unavailable:
		return fmt.Sprintf("the cluster's agent last renewed its heartbeat %s ago (grace %s)", age.Round(time.Second), grace)
	case a == Available:
		return "the cluster's agent renews its heartbeat"
	}
	return "the cluster's agent has not renewed its heartbeat since the hub started watching"
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
