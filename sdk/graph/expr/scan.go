package expr

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by every error Scan returns.
var ErrSyntax = errors.New("invalid ${} expression")

// Segment is a piece of a scanned string: literal text, or the source of one
// expression without its ${ and }.
type Segment struct {
	Text string
	Expr bool
}

// Scan splits s into literal text and ${...} expressions, in order.
// Adjacent literal text is merged; an empty s gives no segments. A "$" not
// followed by "{" is literal text. An expression ends at the "}" that
// balances its "${", ignoring braces inside CEL string literals.
func Scan(s string) ([]Segment, error) {
	var segs []Segment
	var lit strings.Builder
	for i := 0; i < len(s); {
		if !strings.HasPrefix(s[i:], "${") {
			lit.WriteByte(s[i])
			i++
			continue
		}
		end, err := exprEnd(s, i+2)
		if err != nil {
			return nil, err
		}
		src := s[i+2 : end]
		if strings.TrimSpace(src) == "" {
			return nil, fmt.Errorf("%w: empty expression at offset %d", ErrSyntax, i)
		}
		if lit.Len() > 0 {
			segs = append(segs, Segment{Text: lit.String()})
			lit.Reset()
		}
		segs = append(segs, Segment{Text: src, Expr: true})
		i = end + 1
	}
	if lit.Len() > 0 {
		segs = append(segs, Segment{Text: lit.String()})
	}
	return segs, nil
}

// Standalone reports whether s is exactly one ${...} expression with nothing
// around it, and returns the expression's source.
func Standalone(s string) (string, bool, error) {
	segs, err := Scan(s)
	if err != nil {
		return "", false, err
	}
	if len(segs) == 1 && segs[0].Expr {
		return segs[0].Text, true, nil
	}
	return "", false, nil
}

// HasExpr reports whether s contains at least one ${...} expression.
func HasExpr(s string) bool {
	return strings.Contains(s, "${")
}

// exprEnd returns the index of the "}" closing the expression whose source
// starts at start.
func exprEnd(s string, start int) (int, error) {
	depth := 1
	for i := start; i < len(s); i++ {
		switch c := s[i]; c {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i, nil
			}
		case '\'', '"':
			end, err := stringEnd(s, i)
			if err != nil {
				return 0, err
			}
			i = end
		}
	}
	return 0, fmt.Errorf("%w: unterminated expression starting at offset %d", ErrSyntax, start-2)
}

// stringEnd returns the index of the last byte of the CEL string literal
// whose opening quote is at s[q]. It understands triple quotes and raw
// strings (r"..."), in which backslash does not escape.
func stringEnd(s string, q int) (int, error) {
	quote := s[q : q+1]
	if strings.HasPrefix(s[q:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	raw := q > 0 && (s[q-1] == 'r' || s[q-1] == 'R') && (q < 2 || !isIdentByte(s[q-2]))
	for i := q + len(quote); i < len(s); i++ {
		if s[i] == '\\' && !raw {
			i++
			continue
		}
		if strings.HasPrefix(s[i:], quote) {
			return i + len(quote) - 1, nil
		}
	}
	return 0, fmt.Errorf("%w: unterminated string literal at offset %d", ErrSyntax, q)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
