package shard

import (
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
)

// view is the membership a replica decides by: the live peers, itself
// included, sorted by ID. Every replica that holds the same view gives
// each cluster to the same peer (rendezvous hashing), so a replica's view
// is also its claim: the clusters it serves, or may start to serve, are
// exactly those the view gives to it.
type view []sharder.PeerInfo

// newView returns the view of peers, sorted, with weight 0 read as 1.
func newView(peers ...sharder.PeerInfo) view {
	v := make(view, 0, len(peers))
	for _, p := range peers {
		v = append(v, sharder.PeerInfo{ID: p.ID, Weight: max(p.Weight, 1)})
	}
	slices.SortFunc(v, func(a, b sharder.PeerInfo) int { return strings.Compare(a.ID, b.ID) })
	return slices.CompactFunc(v, func(a, b sharder.PeerInfo) bool { return a.ID == b.ID })
}

// gives reports whether v gives cluster to peer id: the peer with the
// highest weighted rendezvous score (ties to the lower ID).
func (v view) gives(cluster, id string) bool {
	best, bestScore := "", math.Inf(-1)
	for _, p := range v {
		if s := score(cluster, p); s > bestScore {
			best, bestScore = p.ID, s
		}
	}
	return best != "" && best == id
}

// score is the weighted rendezvous score of peer p for cluster:
// -w/ln(u), with u uniform in (0,1) from a hash of both names. A peer's
// share is then its weight over the sum of weights. (multicluster-runtime's
// HRW multiplies an FNV hash by the weight: replica names that differ in
// their last character alone, as a StatefulSet's do, then split 300
// clusters 75/75/150 over three replicas.)
func score(cluster string, p sharder.PeerInfo) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(cluster))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(p.ID))
	u := (float64(mix(h.Sum64())>>11) + 0.5) / (1 << 53)
	return -float64(max(p.Weight, 1)) / math.Log(u)
}

// mix is a 64-bit finaliser (SplitMix64's): every input bit moves about
// half the output bits, which FNV alone does not do for a last byte.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// String encodes v as "id=weight,id=weight", the form kept on a Lease.
func (v view) String() string {
	parts := make([]string, len(v))
	for i, p := range v {
		parts[i] = p.ID + "=" + strconv.FormatUint(uint64(p.Weight), 10)
	}
	return strings.Join(parts, ",")
}

// parseView reads String's form; ok is false for anything else, and for
// an empty view.
func parseView(s string) (view, bool) {
	if s == "" {
		return nil, false
	}
	var peers []sharder.PeerInfo
	for _, part := range strings.Split(s, ",") {
		id, w, found := strings.Cut(part, "=")
		weight, err := strconv.ParseUint(w, 10, 32)
		if !found || id == "" || err != nil {
			return nil, false
		}
		peers = append(peers, sharder.PeerInfo{ID: id, Weight: uint32(weight)})
	}
	return newView(peers...), true
}

// equal reports whether v and o hold the same peers and weights.
func (v view) equal(o view) bool { return slices.Equal(v, o) }
