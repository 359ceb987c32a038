package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNormalizeTemplateKeepsWhatMatters(t *testing.T) {
	for in, want := range map[string]string{
		"plain  text":                      "plain  text",
		"${ schema.spec.name }":            "${schema.spec.name}",
		"a- ${ x + '-' + y }  -b":          "a- ${x+'-'+y}  -b",
		"${x in  [ 'a b' ]}":               "${x in['a b']}",
		`${"a  b" + r'\' +  "c"}`:          `${"a  b"+r'\'+"c"}`,
		"${'''it's  ''' +\n x}":            "${'''it's  '''+x}",
		`${ "\"  " + x }`:                  `${"\"  "+x}`,
		"${schema.spec.name}-${ i }":       "${schema.spec.name}-${i}",
		"${unterminated":                   "${unterminated",
		"${size( schema.spec.items ) > 1}": "${size(schema.spec.items)>1}",
	} {
		assert.Equal(t, want, normalizeTemplate(in), in)
	}
}
