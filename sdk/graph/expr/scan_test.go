package expr_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/sdk/graph/expr"
)

func lit(s string) expr.Segment { return expr.Segment{Text: s} }
func ex(s string) expr.Segment  { return expr.Segment{Text: s, Expr: true} }

func TestScan(t *testing.T) {
	tests := []struct {
		in   string
		want []expr.Segment
	}{
		{"", nil},
		{"plain", []expr.Segment{lit("plain")}},
		{"$5 and $ {x}", []expr.Segment{lit("$5 and $ {x}")}},
		{"${a.b}", []expr.Segment{ex("a.b")}},
		{"${a}-${b}", []expr.Segment{ex("a"), lit("-"), ex("b")}},
		{"pre ${a} post", []expr.Segment{lit("pre "), ex("a"), lit(" post")}},
		{"${{'k': 1}}", []expr.Segment{ex("{'k': 1}")}},
		{"${{'k': {'n': 2}}.k}", []expr.Segment{ex("{'k': {'n': 2}}.k")}},
		{`${"}" + '{'}`, []expr.Segment{ex(`"}" + '{'`)}},
		{`${"a\"}" + x}`, []expr.Segment{ex(`"a\"}" + x`)}},
		{`${r"\" + x}`, []expr.Segment{ex(`r"\" + x`)}},
		{`${"""a"}b""" + x}`, []expr.Segment{ex(`"""a"}b""" + x`)}},
		{"${x}${y}", []expr.Segment{ex("x"), ex("y")}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := expr.Scan(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestScanRejects(t *testing.T) {
	tests := map[string]string{
		"${":           "unterminated expression",
		"a ${b":        "unterminated expression starting at offset 2",
		"${}":          "empty expression",
		"${  }":        "empty expression",
		`${"abc}`:      "unterminated string literal",
		"${{'a': 1}":   "unterminated expression",
		`${'''abc'}'}`: "unterminated",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			_, err := expr.Scan(in)
			require.ErrorIs(t, err, expr.ErrSyntax)
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestStandalone(t *testing.T) {
	src, ok, err := expr.Standalone("${schema.spec.replicas}")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "schema.spec.replicas", src)

	for _, s := range []string{"x${a}", "${a} ", "${a}${b}", "plain"} {
		_, ok, err := expr.Standalone(s)
		require.NoError(t, err)
		assert.False(t, ok, s)
	}
}

// FuzzScan checks that Scan never panics and that what it returns puts the
// input back together.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "a", "${a}", "x-${a.b}-${c}", `${"}"}`, "${{'a':{}}}", `${r'\'}`, `${"""}"""}`, "${", "$${a}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := expr.Scan(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, seg := range segs {
			if seg.Expr {
				b.WriteString("${" + seg.Text + "}")
				continue
			}
			if i > 0 && !segs[i-1].Expr {
				t.Fatalf("adjacent literal segments in %q", s)
			}
			b.WriteString(seg.Text)
		}
		if b.String() != s {
			t.Fatalf("segments of %q rebuild %q", s, b.String())
		}
	})
}
