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
type mapsLib struct{}

func (mapsLib) LibraryName() string { return "kro.maps" }

func (mapsLib) ProgramOptions() []cel.ProgramOption { return nil }

func (mapsLib) CompileOptions() []cel.EnvOption {
	m := cel.MapType(cel.TypeParamType("K"), cel.TypeParamType("V"))
	return []cel.EnvOption{
		cel.Function("merge", cel.MemberOverload("map_merge", []*cel.Type{m, m}, m, cel.BinaryBinding(mergeMaps))),
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
