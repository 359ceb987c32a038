package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

func TestOurOwnInstanceWritesDoNotRequeue(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	o.SetGeneration(1)
	n := o.DeepCopy()
	n.SetFinalizers([]string{contract.Finalizer})
	n.SetAnnotations(map[string]string{contract.AnnotationChildKinds: "v1/ConfigMap"})
	n.Object["status"] = map[string]any{"state": contract.StateActive}
	assert.False(t, metaChanged(o, n))
	n.SetAnnotations(map[string]string{contract.AnnotationReconcile: contract.ReconcileSuspended})
	assert.True(t, metaChanged(o, n))
	n = o.DeepCopy()
	n.SetGeneration(2)
	assert.True(t, metaChanged(o, n))
}
