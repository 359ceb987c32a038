package graph

import (
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/operators"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// Most expressions in an RGD are a bare field path: ${schema.spec.name},
// ${db.status.endpoint}, ${app.spec.containers[0].image}. CEL's parser is an ANTLR grammar whose set-up
// alone (a lexer, a token stream, a parser and its listeners per text)
// costs far more than such a text needs, and a graph's first compile
// spent half its CPU there. parsePath builds the same AST, with the same
// ids and positions, for the one shape it recognises, and leaves every
// other text to CEL; parse_path_internal_test.go holds it to CEL's parser
// on every shape it accepts and many it must not.

// pathMaxSteps bounds the names and indexes a path may have to be parsed
// here: far below the parser's recursion limit, and above any path an RGD
// writes.
const pathMaxSteps = 32

// pathMaxDigits bounds an index's digits, so that every index parsed here
// fits an int64 as CEL's parser reads it.
const pathMaxDigits = 9

// reservedNames are the words CEL's grammar lexes as keywords (in, true,
// false, null) or refuses as identifiers (the rest). A path naming one
// goes to CEL's parser, which reports it or parses it as it must.
var reservedNames = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true,
	"false": true, "for": true, "function": true, "if": true, "import": true,
	"in": true, "let": true, "loop": true, "package": true, "namespace": true,
	"null": true, "return": true, "true": true, "var": true, "void": true,
	"while": true,
}

// pathStep is one step of a path after its first name: .field or [index].
type pathStep struct {
	at    int    // the offset of its '.' or '['
	field string // the field's name; "" for an index
	index int64
}

// parsePath is env.Parse(src) for a src of the form name(.name|[index])*,
// where a name is a letter or underscore followed by letters, digits or
// underscores and not reserved, an index is a decimal of at most
// pathMaxDigits digits without a leading zero, there are at most
// pathMaxSteps steps, and there is nothing else (no space, no leading
// dot, no optional step). ok is false for any other text.
func parsePath(src string) (ast *cel.Ast, ok bool) {
	first, steps, ok := pathSteps(src)
	if !ok {
		return nil, false
	}
	positions := make(map[int64]int32, 2*len(steps)+1)
	id := int64(1)
	positions[id] = 0
	expr := &exprpb.Expr{Id: id, ExprKind: &exprpb.Expr_IdentExpr{IdentExpr: &exprpb.Expr_Ident{Name: first}}}
	for _, st := range steps {
		id++
		positions[id] = int32(st.at)
		if st.field != "" {
			expr = &exprpb.Expr{Id: id, ExprKind: &exprpb.Expr_SelectExpr{SelectExpr: &exprpb.Expr_Select{Operand: expr, Field: st.field}}}
			continue
		}
		// CEL numbers the index's call before its literal, which follows '['.
		positions[id+1] = int32(st.at + 1)
		lit := &exprpb.Expr{Id: id + 1, ExprKind: &exprpb.Expr_ConstExpr{ConstExpr: &exprpb.Constant{ConstantKind: &exprpb.Constant_Int64Value{Int64Value: st.index}}}}
		expr = &exprpb.Expr{Id: id, ExprKind: &exprpb.Expr_CallExpr{CallExpr: &exprpb.Expr_Call{Function: operators.Index, Args: []*exprpb.Expr{expr, lit}}}}
		id++
	}
	pb := &exprpb.ParsedExpr{Expr: expr, SourceInfo: &exprpb.SourceInfo{
		Location:    "<input>",
		LineOffsets: []int32{int32(len(src)) + 1},
		Positions:   positions,
	}}
	return cel.ParsedExprToAstWithSource(pb, common.NewTextSource(src)), true
}

// pathSteps splits the path src into its first name and its steps, or
// returns ok false when src is not such a path.
func pathSteps(src string) (first string, steps []pathStep, ok bool) {
	end := nameEnd(src, 0)
	if end < 0 {
		return "", nil, false
	}
	first = src[:end]
	for i := end; i < len(src); {
		if len(steps) == pathMaxSteps {
			return "", nil, false
		}
		var st pathStep
		st, i = pathStepAt(src, i)
		if i < 0 {
			return "", nil, false
		}
		steps = append(steps, st)
	}
	return first, steps, true
}

// pathStepAt reads the step at src[i:] and returns it with the offset
// after it, or next -1 when there is no step there.
func pathStepAt(src string, i int) (st pathStep, next int) {
	st.at = i
	switch src[i] {
	case '.':
		end := nameEnd(src, i+1)
		if end < 0 {
			return st, -1
		}
		st.field = src[i+1 : end]
		return st, end
	case '[':
		end := i + 1
		for end < len(src) && '0' <= src[end] && src[end] <= '9' {
			end++
		}
		digits := src[i+1 : end]
		if end == len(src) || src[end] != ']' || digits == "" || len(digits) > pathMaxDigits || len(digits) > 1 && digits[0] == '0' {
			return st, -1
		}
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return st, -1
		}
		st.index = n
		return st, end + 1
	}
	return st, -1
}

// nameEnd returns the end of the name starting at src[i], or -1 when no
// name that CEL reads as an identifier starts there.
func nameEnd(src string, i int) int {
	end := i
	for end < len(src) && nameByte(src[end], end == i) {
		end++
	}
	if end == i || reservedNames[src[i:end]] {
		return -1
	}
	return end
}

// nameByte reports whether c may stand in a CEL identifier (first: at its
// start).
func nameByte(c byte, first bool) bool {
	switch {
	case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9':
		return !first
	}
	return false
}
