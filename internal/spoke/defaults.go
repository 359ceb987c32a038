package spoke

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/crdschema"
)

// The API server applies a CRD's defaults each time it reads an object. An
// instance the cluster's informer listed before a graph update added a
// defaulted field therefore lacks the field until the instance next
// changes, and the new version's expressions would fail on it ("no such
// key") where a fresh read, as kro makes after an update, has the default.
// So every instance read from the cache gets the version's defaults, as
// the API server would give them. This also covers caches that cannot drop
// an informer to list afresh (kcp's virtual workspaces share theirs).

// withDefaults sets the defaults of the graph's instance schema on inst, a
// copy the member owns.
func (m *member) withDefaults(inst *unstructured.Unstructured) *unstructured.Unstructured {
	crdschema.Default(inst.Object, m.defaults)
	return inst
}
