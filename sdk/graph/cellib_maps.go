package graph

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// mapsLib is kro's map extension: a.merge(b) returns a new map holding
// a's entries overwritten by b's. Both maps must have the same key and
// value types at type-check time.
//
//	map(K, V).merge(map(K, V)) map(K, V)
//
// a.deepMerge(b) (kro v0.9.4) merges recursively: where both hold a map
// under one key, the two maps are merged in turn; anything else of b's
// (a list, a scalar, a map over a non-map) replaces a's. It takes and
// returns dyn, so objects of different types merge, and fails at run time
// unless both are maps.
//
//	dyn.deepMerge(dyn) dyn
type mapsLib struct{}

func (mapsLib) LibraryName() string { return "kro.maps" }

func (mapsLib) ProgramOptions() []cel.ProgramOption { return nil }

func (mapsLib) CompileOptions() []cel.EnvOption {
	m := cel.MapType(cel.TypeParamType("K"), cel.TypeParamType("V"))
	return []cel.EnvOption{
		cel.Function("merge", cel.MemberOverload("map_merge", []*cel.Type{m, m}, m, cel.BinaryBinding(mergeMaps))),
		cel.Function("deepMerge", cel.MemberOverload("dyn_deepmerge_dyn", []*cel.Type{cel.DynType, cel.DynType}, cel.DynType,
			cel.BinaryBinding(deepMergeMaps))),
	}
}

func mergeMaps(lhs, rhs ref.Val) ref.Val {
	a, ok1 := lhs.(traits.Mapper)
	b, ok2 := rhs.(traits.Mapper)
	if !ok1 || !ok2 {
		return types.ValOrErr(lhs, "no such overload: %v.merge(%v)", lhs.Type(), rhs.Type())
	}
	out := make(map[ref.Val]ref.Val, int(a.Size().(types.Int)+b.Size().(types.Int)))
	for _, m := range []traits.Mapper{a, b} {
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			out[k] = m.Get(k)
		}
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

func deepMergeMaps(lhs, rhs ref.Val) ref.Val {
	a, ok := lhs.(traits.Mapper)
	if !ok {
		return types.MaybeNoSuchOverloadErr(lhs)
	}
	b, ok := rhs.(traits.Mapper)
	if !ok {
		return types.MaybeNoSuchOverloadErr(rhs)
	}
	return deepMerge(a, b)
}

// deepMerge merges b onto a. Neither is modified: an empty side returns
// the other as it is, as kro does. It recurses no deeper than the maps
// nest, and its price (deepMergePrice) bounds the entries it copies.
func deepMerge(a, b traits.Mapper) ref.Val {
	if b.Size() == types.IntZero {
		return a
	}
	if a.Size() == types.IntZero {
		return b
	}
	out := make(map[ref.Val]ref.Val, int(a.Size().(types.Int)+b.Size().(types.Int)))
	for it := a.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		out[k] = a.Get(k)
	}
	for it := b.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		v := b.Get(k)
		if prev, ok := out[k].(traits.Mapper); ok {
			if next, ok := v.(traits.Mapper); ok {
				out[k] = deepMerge(prev, next)
				continue
			}
		}
		out[k] = v
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}
