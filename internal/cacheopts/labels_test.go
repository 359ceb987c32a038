package cacheopts_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
	"github.com/fleetgraph/fleetgraph/internal/contract"
)

// The labels whose values TrimObject shares are spelt out in this package,
// which must not import contract: they must stay contract's.
func TestSharedLabelValuesAreTheContractsRepeatedLabels(t *testing.T) {
	repeated := []string{contract.LabelManagedBy, contract.LabelGraph, contract.LabelNodeID, contract.LabelInstanceNamespace}
	unique := []string{contract.LabelInstanceUID, contract.LabelInstanceName}
	labels := func() map[string]string {
		l := map[string]string{}
		for _, k := range append(append([]string{}, repeated...), unique...) {
			l[k] = string([]byte("value-of-" + k)) // a copy of its own each time
		}
		return l
	}
	trimmed := func() map[string]string {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetLabels(labels())
		out, err := cacheopts.TrimObject(meta)
		assert.NoError(t, err)
		return out.(*metav1.PartialObjectMetadata).Labels
	}
	a, b := trimmed(), trimmed()
	for _, k := range repeated {
		assert.True(t, sameString(a[k], b[k]), "the value of %s is shared", k)
	}
	for _, k := range unique {
		assert.False(t, sameString(a[k], b[k]), "the value of %s is not shared", k)
	}
}

func sameString(a, b string) bool {
	return len(a) > 0 && len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}
