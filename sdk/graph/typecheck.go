package graph

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// assignable reports whether a value of CEL type got may fill a field whose
// schema has CEL type want. It is lenient where JSON is: dyn fits
// anything, integers fit numbers, objects and maps of the right shape fit
// each other. Like kro, only a string fits a string field: a timestamp,
// duration or bytes value needs string() first.
func assignable(want *apiservercel.DeclType, got *cel.Type) bool {
	got = unwrapOptional(got)
	if want == nil || isDyn(got) || got.Kind() == types.NullTypeKind {
		return true
	}
	wt := want.CelType()
	switch wt.Kind() {
	case types.DynKind, types.AnyKind:
		return true
	case types.StringKind:
		return got.Kind() == types.StringKind
	case types.IntKind:
		return got.Kind() == types.IntKind || got.Kind() == types.UintKind
	case types.DoubleKind:
		return got.Kind() == types.IntKind || got.Kind() == types.UintKind || got.Kind() == types.DoubleKind
	case types.BoolKind:
		return got.Kind() == types.BoolKind
	case types.ListKind:
		return got.Kind() == types.ListKind && assignable(want.ElemType, got.Parameters()[0])
	case types.MapKind:
		if got.Kind() == types.MapKind {
			return assignable(want.ElemType, got.Parameters()[1])
		}
		return got.Kind() == types.StructKind
	case types.StructKind:
		return got.Kind() == types.StructKind || got.Kind() == types.MapKind
	}
	return wt.IsAssignableType(got)
}

func isDyn(t *cel.Type) bool {
	return t == nil || t.Kind() == types.DynKind || t.Kind() == types.AnyKind || t.Kind() == types.TypeParamKind
}

// isList reports whether t may be a list at run time, and returns its
// element type.
func isList(t *cel.Type) (*cel.Type, bool) {
	t = unwrapOptional(t)
	switch {
	case isDyn(t):
		return cel.DynType, true
	case t.Kind() == types.ListKind:
		return t.Parameters()[0], true
	}
	return nil, false
}

// isBool reports whether t may be a bool at run time.
func isBool(t *cel.Type) bool {
	return isDyn(t) || t.Kind() == types.BoolKind
}
