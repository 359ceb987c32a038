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
		{`${"}" + "{"}`, []expr.Segment{ex(`"}" + "{"`)}},
		{`${"a\"}" + x}`, []expr.Segment{ex(`"a\"}" + x`)}},
		{"${x}${y}", []expr.Segment{ex("x"), ex("y")}},
		{`${"${x}"}`, []expr.Segment{ex(`"${x}"`)}},
		// As in kro v0.9.4: only double quotes hide braces, and a "${"
		// that nothing closes is text.
		{"${'}'}", []expr.Segment{ex("'"), lit("'}")}},
		{`${"}" + '{'}`, []expr.Segment{lit(`${"}" + '{'}`)}},
		{`${'a"b'}`, []expr.Segment{lit(`${'a"b'}`)}},
		{`${"abc}`, []expr.Segment{lit(`${"abc}`)}},
		{"${", []expr.Segment{lit("${")}},
		{"a ${b", []expr.Segment{lit("a ${b")}},
		{"${a} and ${b", []expr.Segment{ex("a"), lit(" and ${b")}},
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
		"${}":             "empty expression",
		"${  }":           "empty expression",
		"${a ${b}}":       "an expression inside an expression at offset 4",
		"${{'a': 1} ${x}": "an expression inside an expression",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			_, err := expr.Scan(in)
			require.ErrorIs(t, err, expr.ErrSyntax)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// kro v0.9.4 reads a "${" that nothing closes as text; Unterminated finds
// it, for a warning.
func TestUnterminated(t *testing.T) {
	for _, s := range []string{"${", "hello ${schema.spec.name", "${a} and ${b", `${"abc}`, "${{'a': 1}"} {
		assert.True(t, expr.Unterminated(s), s)
		segs, err := expr.Scan(s)
		require.NoError(t, err, s)
		assert.NotEmpty(t, segs, s)
	}
	for _, s := range []string{"", "plain", "${a}", "$ {a", "${a ${b}}"} {
		assert.False(t, expr.Unterminated(s), s)
	}
}

// Scanning a string of many unterminated "${" costs a bounded number of
// passes over it, not one per "${".
func TestUnterminatedScansAreBounded(t *testing.T) {
	s := strings.Repeat(`${"`, 200_000)
	segs, err := expr.Scan(s)
	require.NoError(t, err)
	assert.Equal(t, []expr.Segment{lit(s)}, segs)
}

func TestStandalone(t *testing.T) {
	src, ok, err := expr.Standalone("${schema.spec.replicas}")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "schema.spec.replicas", src)

	for _, s := range []string{"x${a}", "${a} ", "${a}${b}", "plain", "${a"} {
		_, ok, err := expr.Standalone(s)
		require.NoError(t, err)
		assert.False(t, ok, s)
	}
}

// FuzzScan checks that Scan never panics and that what it returns puts the
// input back together.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "a", "${a}", "x-${a.b}-${c}", `${"}"}`, "${{'a':{}}}", `${r'\'}`, `${"""}"""}`, "${", "$${a}}", "${a ${b}"} {
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
