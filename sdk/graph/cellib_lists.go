package graph

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// indexListsLib is kro's list-editing library. Each function returns a new
// list; an index out of range is an evaluation error.
//
//	lists.setAtIndex(list(T), int, T) list(T)      // index in [0, size)
//	lists.insertAtIndex(list(T), int, T) list(T)   // index in [0, size]; size appends
//	lists.removeAtIndex(list(T), int) list(T)      // index in [0, size)
type indexListsLib struct{}

func (indexListsLib) LibraryName() string { return "kro.lists" }

func (indexListsLib) ProgramOptions() []cel.ProgramOption { return nil }

func (indexListsLib) CompileOptions() []cel.EnvOption {
	t := cel.TypeParamType("T")
	l := cel.ListType(t)
	return []cel.EnvOption{
		cel.Function("lists.setAtIndex", cel.Overload("lists.setAtIndex_list_int_T",
			[]*cel.Type{l, cel.IntType, t}, l, cel.FunctionBinding(listEdit("lists.setAtIndex", 0, 1)))),
		cel.Function("lists.insertAtIndex", cel.Overload("lists.insertAtIndex_list_int_T",
			[]*cel.Type{l, cel.IntType, t}, l, cel.FunctionBinding(listEdit("lists.insertAtIndex", 1, 0)))),
		cel.Function("lists.removeAtIndex", cel.Overload("lists.removeAtIndex_list_int",
			[]*cel.Type{l, cel.IntType}, l, cel.FunctionBinding(listEdit("lists.removeAtIndex", 0, 1)))),
	}
}

// listEdit returns a binding that replaces the element at index (or, with
// an empty range, inserts before it) by the optional third argument.
// slack widens the valid index range past the last element (1 for insert);
// drop is how many elements the edit removes at index.
func listEdit(name string, slack, drop int64) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		l, ok := args[0].(traits.Lister)
		if !ok {
			return types.NewErr("%s: first argument must be a list", name)
		}
		idx, ok := args[1].(types.Int)
		if !ok {
			return types.NewErr("%s: index must be an integer", name)
		}
		size := int64(l.Size().(types.Int))
		if i := int64(idx); i < 0 || i >= size+slack {
			closing := ")"
			if slack > 0 {
				closing = "]"
			}
			return types.NewErr("%s: index %d out of bounds [0, %d%s", name, i, size, closing)
		}
		out := make([]ref.Val, 0, size+1)
		for i := int64(0); i < int64(idx); i++ {
			out = append(out, l.Get(types.Int(i)))
		}
		if len(args) == 3 {
			out = append(out, args[2])
		}
		for i := int64(idx) + drop; i < size; i++ {
			out = append(out, l.Get(types.Int(i)))
		}
		return types.NewRefValList(types.DefaultTypeAdapter, out)
	}
}
