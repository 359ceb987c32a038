package sample

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// matching returns a short string that pattern matches, preferring want
// when it matches already; false when it finds none.
func matching(pattern, want string) (string, bool) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", false
	}
	if re.MatchString(want) {
		return want, true
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	write(&b, parsed.Simplify())
	s := b.String()
	return s, re.MatchString(s)
}

// write writes a shortest string that re matches, taking the first choice
// of every alternative and class (a letter or digit when the class has
// one).
func write(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		b.WriteRune(pick(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		write(b, re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			write(b, sub)
		}
	case syntax.OpAlternate:
		write(b, re.Sub[0])
	case syntax.OpPlus:
		write(b, re.Sub[0])
	case syntax.OpRepeat:
		for range re.Min {
			write(b, re.Sub[0])
		}
	}
	// OpStar, OpQuest, anchors and boundaries need nothing.
}

// pick chooses a rune of a class given as ranges: a lowercase letter, a
// letter or a digit if there is one, else its first.
func pick(ranges []rune) rune {
	for _, want := range []string{"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"} {
		for _, r := range want {
			for i := 0; i+1 < len(ranges); i += 2 {
				if ranges[i] <= r && r <= ranges[i+1] {
					return r
				}
			}
		}
	}
	if len(ranges) > 0 {
		return ranges[0]
	}
	return 'a'
}
