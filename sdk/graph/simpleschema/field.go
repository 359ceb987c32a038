package simpleschema

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrSyntax is wrapped by errors about malformed field strings.
var ErrSyntax = errors.New("invalid SimpleSchema")

// Field is one parsed leaf: a type and its markers, in order.
type Field struct {
	Type    string
	Markers []Marker
}

// Marker is one name=value pair of a field. Value is unquoted: a quoted value
// has its quotes removed and \" and \\ unescaped; any other backslash is
// kept, so patterns such as "\d+" survive.
type Marker struct {
	Name  string
	Value string
}

// ParseField parses "type | marker=value ...".
func ParseField(s string) (Field, error) {
	typ, markers, piped := strings.Cut(s, "|")
	if strings.TrimSpace(typ) == "" {
		return Field{}, fmt.Errorf("%w: missing type in %q", ErrSyntax, s)
	}
	t, err := normalizeType(typ)
	if err != nil {
		return Field{}, err
	}
	f := Field{Type: t}
	if err := checkMarkersEnd(s, markers, piped); err != nil {
		return Field{}, err
	}
	ms, err := parseMarkers(markers)
	if err != nil {
		return Field{}, err
	}
	f.Markers = ms
	return f, nil
}

// markerScanner splits "a=1 b="x y" c={"k": [1, 2]}" into markers.
type markerScanner struct {
	s   string
	pos int
}

func parseMarkers(s string) ([]Marker, error) {
	sc := &markerScanner{s: s}
	var out []Marker
	for {
		sc.skipSpace()
		if sc.pos >= len(sc.s) {
			return out, nil
		}
		m, err := sc.marker()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
}

func (sc *markerScanner) skipSpace() {
	for sc.pos < len(sc.s) && unicode.IsSpace(rune(sc.s[sc.pos])) {
		sc.pos++
	}
}

// marker reads one name=value. As in kro, spaces in or after the name are
// dropped ("required =true" is required=true).
func (sc *markerScanner) marker() (Marker, error) {
	start := sc.pos
	var b strings.Builder
	for sc.pos < len(sc.s) && sc.s[sc.pos] != '=' {
		if !unicode.IsSpace(rune(sc.s[sc.pos])) {
			b.WriteByte(sc.s[sc.pos])
		}
		sc.pos++
	}
	name := b.String()
	if sc.pos >= len(sc.s) || sc.s[sc.pos] != '=' {
		return Marker{}, fmt.Errorf("%w: marker %q has no value (want %s=value)", ErrSyntax, name, name)
	}
	if name == "" {
		return Marker{}, fmt.Errorf("%w: marker without a name at %q", ErrSyntax, sc.s[start:])
	}
	sc.pos++ // '='
	value, err := sc.value()
	if err != nil {
		return Marker{}, fmt.Errorf("marker %q: %w", name, err)
	}
	return Marker{Name: name, Value: value}, nil
}

func (sc *markerScanner) value() (string, error) {
	if sc.pos < len(sc.s) && sc.s[sc.pos] == '"' {
		return sc.quoted()
	}
	start := sc.pos
	depth := 0
	inString := false
	for ; sc.pos < len(sc.s); sc.pos++ {
		c := sc.s[sc.pos]
		switch {
		case inString && c == '\\':
			sc.pos++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth < 0 {
				return "", fmt.Errorf("%w: unbalanced %q", ErrSyntax, string(c))
			}
		case depth == 0 && unicode.IsSpace(rune(c)):
			return sc.s[start:sc.pos], nil
		}
	}
	if inString || depth != 0 {
		return "", fmt.Errorf("%w: unterminated value %q", ErrSyntax, sc.s[start:])
	}
	return sc.s[start:], nil
}

func (sc *markerScanner) quoted() (string, error) {
	var b strings.Builder
	for i := sc.pos + 1; i < len(sc.s); i++ {
		c := sc.s[i]
		switch {
		case c == '\\' && i+1 < len(sc.s) && (sc.s[i+1] == '"' || sc.s[i+1] == '\\'):
			b.WriteByte(sc.s[i+1])
			i++
		case c == '"':
			sc.pos = i + 1
			if sc.pos < len(sc.s) && !unicode.IsSpace(rune(sc.s[sc.pos])) {
				return "", fmt.Errorf("%w: unexpected %q after closing quote", ErrSyntax, sc.s[sc.pos:])
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted value", ErrSyntax)
}
