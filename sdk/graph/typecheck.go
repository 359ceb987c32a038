package graph

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// assignable reports whether a value of CEL type got may fill a field whose
// schema has CEL type want, by kind: dyn fits anything, objects and maps
// fit each other. As in kro, the kinds must otherwise agree: only a string
// fits a string field (a timestamp, duration or bytes value needs string()
// first), an int does not fit a number field (double() it), and null fits
// only an object.
func assignable(want *apiservercel.DeclType, got *cel.Type) bool {
	got = unwrapOptional(got)
	if want == nil || isDyn(got) {
		return true
	}
	wt := want.CelType()
	if got.Kind() == types.NullTypeKind {
		return wt.Kind() == types.DynKind || wt.Kind() == types.AnyKind || wt.Kind() == types.StructKind || isFreeForm(want)
	}
	switch wt.Kind() {
	case types.DynKind, types.AnyKind:
		return true
	case types.StringKind:
		return got.Kind() == types.StringKind
	case types.IntKind:
		return got.Kind() == types.IntKind
	case types.DoubleKind:
		return got.Kind() == types.DoubleKind
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

// isFreeForm reports whether want is the type of an object that takes any
// field: kro types such an object as one with no declared fields, which
// null fits.
func isFreeForm(want *apiservercel.DeclType) bool {
	return want.IsMap() && want.ElemType != nil && want.ElemType.CelType().Kind() == types.DynKind
}

// fitChecker checks that the type of an expression fits the field it
// fills, looking the object types it compares up among a compile's.
type fitChecker struct{ envs *celEnvs }

// fits checks that a value of type got may fill a field of type want: by
// kind (assignable), then structurally, as kro v0.9.4 does (see
// structurallyFits). It returns why not; the error of a kind mismatch is
// empty, the caller's message says it all.
func (fc fitChecker) fits(want *apiservercel.DeclType, got *cel.Type) error {
	if !assignable(want, got) {
		return errors.New("")
	}
	return fc.structurallyFits(want, got, 0)
}

// maxFitDepth bounds the walk; kinds nest about a dozen levels.
const maxFitDepth = 32

// structurallyFits follows kro's structural compatibility rules, including
// where they are lenient, so that fleetgraph refuses what kro refuses and
// nothing more:
//   - an object fits an object field when each of its fields is a field of
//     the target (unless the target keeps unknown fields) and fits it;
//   - a map fits an object field when its values fit every field;
//   - an object fits a map field when every field fits the map's values;
//   - lists and maps compare element, key and value types;
//   - anything else must be of the same kind (an int is not a double).
//
// An object type it cannot look up is taken to fit, as in kro.
func (fc fitChecker) structurallyFits(want *apiservercel.DeclType, got *cel.Type, depth int) error {
	got = unwrapOptional(got)
	if want == nil || depth > maxFitDepth || isDyn(got) {
		return nil
	}
	wt := want.CelType()
	switch {
	case isDyn(wt):
		return nil
	case want.IsObject() && got.Kind() == types.MapKind:
		return fc.mapFitsObject(want, got, depth)
	case want.IsMap() && got.Kind() == types.StructKind:
		return fc.objectFitsMap(want, got, depth)
	case want.IsList():
		return fc.paramsFit(got, []*apiservercel.DeclType{want.ElemType}, depth)
	case want.IsMap():
		return fc.paramsFit(got, []*apiservercel.DeclType{apiservercel.StringType, want.ElemType}, depth)
	case want.IsObject():
		return fc.objectFitsObject(want, got, depth)
	case got.Kind() != wt.Kind():
		return fmt.Errorf("%s is not %s", typeName(got), typeName(wt))
	}
	return nil
}

// paramsFit compares a list's element or a map's key and value types, as
// kro does: parameter by parameter when both have them.
func (fc fitChecker) paramsFit(got *cel.Type, want []*apiservercel.DeclType, depth int) error {
	params := got.Parameters()
	if len(params) == 0 || len(params) < len(want) {
		if len(params) != len(want) {
			return fmt.Errorf("%s is not %s", typeName(got), typeName(want[0].CelType()))
		}
		return nil
	}
	for i, w := range want {
		if err := fc.structurallyFits(w, params[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (fc fitChecker) mapFitsObject(want *apiservercel.DeclType, got *cel.Type, depth int) error {
	params := got.Parameters()
	if len(params) < 2 || params[0].Kind() != types.StringKind {
		return fmt.Errorf("%s has no string keys", typeName(got))
	}
	for _, name := range sortedKeys(want.Fields) {
		if err := fc.structurallyFits(want.Fields[name].Type, params[1], depth+1); err != nil {
			return fmt.Errorf("its values (%s) do not fit field %q%s", typeName(params[1]), name, because(err))
		}
	}
	return nil
}

func (fc fitChecker) objectFitsMap(want *apiservercel.DeclType, got *cel.Type, depth int) error {
	return fc.eachField(got, func(name string, f *apiservercel.DeclType) error {
		if err := fc.structurallyFits(want.ElemType, f.CelType(), depth+1); err != nil {
			return fmt.Errorf("field %q does not fit the map's values (%s)%s", name, typeName(want.ElemType.CelType()), because(err))
		}
		return nil
	})
}

func (fc fitChecker) objectFitsObject(want *apiservercel.DeclType, got *cel.Type, depth int) error {
	if want.Metadata[openKey] == "true" {
		return nil
	}
	return fc.eachField(got, func(name string, f *apiservercel.DeclType) error {
		wf, ok := want.Fields[name]
		if !ok {
			return fmt.Errorf("field %q is not a field of %s", name, typeName(want.CelType()))
		}
		if err := fc.structurallyFits(wf.Type, f.CelType(), depth+1); err != nil {
			return fmt.Errorf("field %q%s", name, because(err))
		}
		return nil
	})
}

// eachField calls fn on each field of the object type got, in name order;
// a type it cannot find, or that is not an object, is not checked (as in
// kro).
func (fc fitChecker) eachField(got *cel.Type, fn func(string, *apiservercel.DeclType) error) error {
	decl, ok := fc.envs.findDeclType(got.TypeName())
	if !ok || !decl.IsObject() {
		return nil
	}
	for _, name := range sortedKeys(decl.Fields) {
		if f := decl.Fields[name]; f.Type != nil {
			if err := fn(name, f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

func because(err error) string {
	if err.Error() == "" {
		return ""
	}
	return ": " + err.Error()
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
