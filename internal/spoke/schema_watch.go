package spoke

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// The API server applies a CRD's defaults when it reads an object, so an
// instance listed before a graph update that added a defaulted field lacks
// the field, and the cluster's informer keeps that copy until the instance
// next changes. Expressions of the new version reading the field would fail
// ("no such key") where kro, whose informers list afresh, sees the default.
// So when a version with a different instance schema opens on a cluster
// whose cache already watches the kind, the instance informer is replaced:
// its new list carries the defaults.

// instanceSchemas remembers, per instance kind, the schema the cluster's
// instance informer was started under.
type instanceSchemas struct {
	mu   sync.Mutex
	seen map[schema.GroupVersionKind]string
}

// swap records fingerprint for gvk and reports whether the informer was
// started under another one.
func (s *instanceSchemas) swap(gvk schema.GroupVersionKind, fingerprint string) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[schema.GroupVersionKind]string{}
	}
	prev, had := s.seen[gvk]
	s.seen[gvk] = fingerprint
	return had && prev != fingerprint
}

// instanceSchemaFingerprint identifies the schemas g's CRD serves.
func instanceSchemaFingerprint(g *graph.Graph) string {
	if g.CRD == nil {
		return ""
	}
	b, err := json.Marshal(g.CRD.Spec.Versions)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// refreshInstanceInformer drops the cluster's instance informer if it was
// started under another schema of the kind, so that the watch about to
// start lists the instances afresh.
func (m *member) refreshInstanceInformer(inst *unstructured.Unstructured) {
	if !m.schemas.swap(m.g.Instance.GVK, instanceSchemaFingerprint(m.g)) {
		return
	}
	if err := m.cl.GetCache().RemoveInformer(m.ctx, inst); err != nil {
		m.log.Info("could not restart the instance watch after a schema change; "+
			"instances get new defaults when they next change", "reason", err.Error())
	}
}
