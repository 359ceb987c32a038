package graph

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// parsePath must give exactly what CEL's parser gives (the same
// expression, ids, positions and line offsets) for every path it takes,
// and take nothing CEL parses otherwise or refuses.
func TestParsePathIsCELsParse(t *testing.T) {
	env, err := fullEnv()
	require.NoError(t, err)
	long := "a" + strings.Repeat(".a", pathMaxSteps)
	for _, src := range []string{
		"schema", "schema.spec.name", "db.status.endpoint", "_x.y_1.Z9",
		"a.b.c.d.e.f.g.h", "has", "schema.metadata.has", "each.all",
		"cluster.name", long, "a[0]", "a.b[12].c[0][3]", "r1.spec.template.spec.containers[0].ports[0].containerPort",
		"a[999999999]", "a" + strings.Repeat("[1]", pathMaxSteps),
	} {
		t.Run(src, func(t *testing.T) {
			got, ok := parsePath(src)
			require.True(t, ok)
			want, iss := env.Parse(src)
			require.NoError(t, iss.Err())
			assertSameParse(t, want, got)
			checked, iss := env.Compile(src)
			if iss.Err() == nil {
				rechecked, iss := env.Check(got)
				require.NoError(t, iss.Err())
				assert.Equal(t, checked.OutputType(), rechecked.OutputType())
			}
		})
	}
}

// Texts that are not a bare path, or name a reserved word, go to CEL's
// parser: each of these parses differently there or is refused, except
// reserved words after a dot, which CEL takes as field names (a.if) and
// parsePath leaves to it rather than tell the two kinds of word apart.
func TestParsePathLeavesTheRestToCEL(t *testing.T) {
	for _, src := range []string{
		"", ".a", "a.", "a..b", "a .b", " a", "a ", "a.b\n", "1a", "a.1b",
		"a.in", "in", "true", "a.true", "null.a", "a.if", "if", "a.`b-c`",
		"a.?b", "a[?0]", "a[00]", "a[01]", "a[0x1]", "a[1u]", "a[-1]", "a[ 0]", "a[0 ]", "a[]", "a[0", "a]",
		"a[1234567890]", "a[0].", "[0]", "a.[0]", "a['b']", "a[b]", "schema.spec.as", "a.b()", "a-b", "a.b-c", "á", "a.é",
		"a" + strings.Repeat(".a", pathMaxSteps+1), "a" + strings.Repeat("[0]", pathMaxSteps+1),
	} {
		_, ok := parsePath(src)
		assert.False(t, ok, "%q", src)
	}
}

// FuzzParsePath: whatever parsePath takes, CEL's parser parses alike.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a.b", "schema.spec.x_1", "a.in", "a..b", "_", "a[0].b", "a[10][2]"} {
		f.Add(s)
	}
	env, err := fullEnv()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, src string) {
		got, ok := parsePath(src)
		if !ok {
			return
		}
		want, iss := env.Parse(src)
		require.NoError(t, iss.Err(), "%q", src)
		assertSameParse(t, want, got)
	})
}

func assertSameParse(t *testing.T, want, got *cel.Ast) {
	t.Helper()
	wantPB, err := cel.AstToParsedExpr(want)
	require.NoError(t, err)
	gotPB, err := cel.AstToParsedExpr(got)
	require.NoError(t, err)
	assert.True(t, proto.Equal(wantPB, gotPB), "want %v\ngot  %v", wantPB, gotPB)
	assert.Equal(t, want.Source().Content(), got.Source().Content())
	assert.Equal(t, want.Source().LineOffsets(), got.Source().LineOffsets())
}
