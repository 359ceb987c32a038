package graph

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fleetgraph/fleetgraph/internal/crdcompat"
)

// CheckCompatible reports whether replacing the CRD old with new could break
// objects already stored or clients already written against old: a removed
// version or property, a changed type or scope, a new required field
// without default, a narrowed enum, a changed pattern, a bound (minimum,
// maximum, minLength, maxLength, minItems, maxItems) added or tightened. It
// returns nil when
// the change is safe, otherwise an *Error wrapping ErrBreakingChange that
// lists every break with its path, e.g.
//
//	breaking schema change: v1alpha1: spec.port: type changed from integer to string; v1alpha1: spec.size: new required field
//
// Either CRD may be nil (nothing to compare: compatible). The comparison
// itself is shared with the hub's fan-out and the kcp APIExport publisher
// (internal/crdcompat), so all three refuse the same changes.
func CheckCompatible(old, new *apiextensionsv1.CustomResourceDefinition) error {
	breaks := crdcompat.Breaks(old, new)
	if len(breaks) == 0 {
		return nil
	}
	return &Error{Err: errorf(ErrBreakingChange, "%s", crdcompat.Message(breaks))}
}
