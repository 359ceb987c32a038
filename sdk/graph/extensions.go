package graph

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
)

// ErrExtension marks, under Options.Strict, the use of something fleetgraph
// accepts and kro v0.9.4 does not.
var ErrExtension = errors.New("not supported by kro (fleetgraph extension)")

// Extension is one use, in a compiled RGD, of something fleetgraph accepts
// and kro v0.9.4 rejects: such an RGD would not work unchanged on kro.
// Options.Strict turns every one into a compile error.
type Extension struct {
	// ResourceID is the resource concerned; empty for spec.schema.
	ResourceID string
	// Path locates the use like Error.Path.
	Path string
	// Feature names the extension, e.g. "CEL function sets.contains" or
	// "number type (kro spells it float)".
	Feature string
}

func (e Extension) String() string {
	if e.ResourceID != "" {
		return fmt.Sprintf("resource %q: %s: %s", e.ResourceID, e.Path, e.Feature)
	}
	return e.Path + ": " + e.Feature
}

// extensionOverloads holds the CEL overloads only the full environment
// has: those of the extension libraries, and the comparisons across
// numeric types that CrossTypeNumericComparisons lets the checker pick.
var extensionOverloads = sync.OnceValues(func() (map[string]bool, error) {
	full, err := fullEnv()
	if err != nil {
		return nil, err
	}
	kro, err := kroEnv()
	if err != nil {
		return nil, err
	}
	inKro := map[string]bool{}
	for _, fn := range kro.Functions() {
		for _, o := range fn.OverloadDecls() {
			inKro[o.ID()] = true
		}
	}
	out := map[string]bool{}
	for _, fn := range full.Functions() {
		for _, o := range fn.OverloadDecls() {
			if !inKro[o.ID()] {
				out[o.ID()] = true
			}
		}
	}
	nums := []string{"int64", "uint64", "double"}
	for _, op := range []string{"less", "less_equals", "greater", "greater_equals"} {
		for _, a := range nums {
			for _, b := range nums {
				if a != b {
					out[op+"_"+a+"_"+b] = true
				}
			}
		}
	}
	return out, nil
})

// celExtensions names the calls in a checked expression that only
// extension overloads can serve, e.g. "CEL function sets.contains".
func celExtensions(ast *cel.Ast) []string {
	ext, err := extensionOverloads()
	if err != nil {
		return nil
	}
	refs := ast.NativeRep().ReferenceMap()
	var out []string
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		ref := refs[e.ID()]
		if ref == nil || len(ref.OverloadIDs) == 0 {
			return
		}
		all := true
		for _, id := range ref.OverloadIDs {
			all = all && ext[id]
		}
		if all {
			out = append(out, "CEL "+describeCall(e.AsCall().FunctionName(), ref.OverloadIDs[0]))
		}
	}))
	return out
}

func describeCall(fn, overload string) string {
	if strings.HasPrefix(fn, "_") {
		return "comparison across numeric types (" + overload + ")"
	}
	if macro, ok := macroNames[fn]; ok {
		fn = macro
	}
	return "function " + fn
}

// macroNames are the functions the math macros expand to, by the name
// users write.
var macroNames = map[string]string{"math.@max": "math.greatest", "math.@min": "math.least"}
