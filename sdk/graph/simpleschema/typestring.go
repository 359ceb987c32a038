package simpleschema

import (
	"fmt"
	"strings"
	"unicode"
)

// maxTypeNesting is how many collections ([] and map[string]) one type
// string may nest, as in kro v0.9.4.
const maxTypeNesting = 16

// normalizeType reads the type part of a field string as kro does: spaces
// around it and after each [] or map[string] are dropped ("map[string]
// string" is map[string]string), and at most maxTypeNesting collections
// nest.
func normalizeType(typ string) (string, error) {
	rest := strings.TrimSpace(typ)
	var b strings.Builder
	depth := 0
	for {
		prefix := ""
		switch {
		case strings.HasPrefix(rest, "[]"):
			prefix = "[]"
		case strings.HasPrefix(rest, "map[string]"):
			prefix = "map[string]"
		}
		if prefix == "" {
			break
		}
		if depth++; depth > maxTypeNesting {
			return "", fmt.Errorf("%w: type %q nests more than %d lists and maps", ErrSyntax, strings.TrimSpace(typ), maxTypeNesting)
		}
		b.WriteString(prefix)
		rest = strings.TrimSpace(rest[len(prefix):])
	}
	if rest == "" {
		return "", fmt.Errorf("%w: type %q has no element type", ErrSyntax, strings.TrimSpace(typ))
	}
	if strings.ContainsFunc(rest, unicode.IsSpace) {
		return "", fmt.Errorf("%w: type %q contains spaces", ErrSyntax, strings.TrimSpace(typ))
	}
	b.WriteString(rest)
	return b.String(), nil
}

// checkMarkersEnd refuses, as kro does, a "|" with no marker after it and
// markers followed by whitespace (a YAML folded block, for one, ends in a
// newline): kro reads either as a marker without a value.
func checkMarkersEnd(field, markers string, piped bool) error {
	if !piped {
		return nil
	}
	if strings.TrimSpace(markers) == "" {
		return fmt.Errorf("%w: %q has no marker after \"|\"", ErrSyntax, field)
	}
	if last := markers[len(markers)-1]; unicode.IsSpace(rune(last)) {
		return fmt.Errorf("%w: %q ends in whitespace after its last marker, which kro reads as a marker without a value", ErrSyntax, field)
	}
	return nil
}

// describe says what a value that is not a type string is, for messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case float64, int64:
		return fmt.Sprintf("the number %v", v)
	}
	return fmt.Sprintf("%T", v)
}
