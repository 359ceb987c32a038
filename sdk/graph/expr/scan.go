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

// maxUnterminated is how many unterminated "${" of one string are looked
// past, as kro does, before the rest of the string is taken as text: each
// is scanned to the end of the string, so this bounds the work a string
// can cost to this many passes over it.
const maxUnterminated = 32

// Scan splits s into literal text and ${...} expressions, in order, the
// way kro v0.9.4 finds them. Adjacent literal text is merged; an empty s
// gives no segments. A "$" not followed by "{" is literal text. An
// expression ends at the "}" that balances its "${"; braces inside double
// quotes do not count (a backslash escapes the next character there),
// while single quotes are not string delimiters to this scan. A "${" that
// nothing closes is literal text (see Unterminated). A "${" inside an
// expression, unless right after a double quote, is an error, as is an
// empty expression.
func Scan(s string) ([]Segment, error) {
	segs, _, err := scan(s)
	return segs, err
}

// Unterminated reports whether s holds a "${" that no "}" closes. kro
// v0.9.4 reads it as literal text, as Scan does; kro v0.10 refuses it. It
// is almost always a typo.
func Unterminated(s string) bool {
	_, n, err := scan(s)
	return err == nil && n > 0
}

// scan is Scan that also counts the unterminated "${".
func scan(s string) ([]Segment, int, error) {
	var segs []Segment
	var lit strings.Builder
	unterminated := 0
	pos := 0 // s[:pos] is in segs or lit
	for search := 0; search < len(s) && unterminated <= maxUnterminated; {
		i := strings.Index(s[search:], "${")
		if i < 0 {
			break
		}
		i += search
		end, closed, err := exprEnd(s, i+2)
		if err != nil {
			return nil, 0, err
		}
		if !closed {
			unterminated++
			search = i + 1
			continue
		}
		src := s[i+2 : end]
		if strings.TrimSpace(src) == "" {
			return nil, 0, fmt.Errorf("%w: empty expression at offset %d", ErrSyntax, i)
		}
		lit.WriteString(s[pos:i])
		if lit.Len() > 0 {
			segs = append(segs, Segment{Text: lit.String()})
			lit.Reset()
		}
		segs = append(segs, Segment{Text: src, Expr: true})
		pos, search = end+1, end+1
	}
	lit.WriteString(s[pos:])
	if lit.Len() > 0 {
		segs = append(segs, Segment{Text: lit.String()})
	}
	return segs, unterminated, nil
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

// HasExpr reports whether s contains at least one "${" (which may not
// close: see Unterminated).
func HasExpr(s string) bool {
	return strings.Contains(s, "${")
}

// exprEnd returns the index of the "}" closing the expression whose source
// starts at start, and whether one does.
func exprEnd(s string, start int) (int, bool, error) {
	depth := 1
	inString, escaped := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i, true, nil
			}
		case c == '$' && i+1 < len(s) && s[i+1] == '{' && s[i-1] != '"':
			return 0, false, fmt.Errorf("%w: an expression inside an expression at offset %d (quote it to mean the text ${)", ErrSyntax, i)
		}
	}
	return 0, false, nil
}
