package status

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -update rewrites the golden files; defined here unless another test
// file of the package defines it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

func updating() bool { return flag.Lookup("update").Value.String() == "true" }

// fleetOfEveryCell has a graph serving everywhere, one rolling out (a
// cluster moving, one unreachable, one with instances in error) and a
// cluster one graph is not known on.
func fleetOfEveryCell() *Fleet {
	return &Fleet{
		Clusters: []string{"eu-1", "eu-2", "us-1"},
		Graphs: []Graph{
			{Name: "shop", Kind: "shop.example/v1 Shop", Ready: "False", Reason: "RollingOut", LatestRevision: 3,
				ClusterCount: 3, Established: 2, Instances: 9, ReadyInstances: 5, Clusters: []Cluster{
					{Name: "eu-1", CRD: "Established", Healthy: true, ServedRevision: ptr[int64](3), DesiredRevision: ptr[int64](3), Instances: ptr[int64](4), ReadyInstances: ptr[int64](4), ErrorInstances: ptr[int64](0)},
					{Name: "eu-2", CRD: "Established", ServedRevision: ptr[int64](2), DesiredRevision: ptr[int64](3), Instances: ptr[int64](3), ReadyInstances: ptr[int64](1), ErrorInstances: ptr[int64](2),
						Reason: "GateNotPassed", Message: `instance "a": Deployment "a" is not available`},
					{Name: "us-1", CRD: "Unreachable", ServedRevision: ptr[int64](2), DesiredRevision: ptr[int64](3), Reachable: "no", Reason: "Unreachable", Message: "GET /readyz: context deadline exceeded"},
				}},
			{Name: "webapp", Kind: "kro.run/v1alpha1 WebApp", Ready: "True", LatestRevision: 1,
				ClusterCount: 2, Established: 2, Instances: 2, ReadyInstances: 2, Clusters: []Cluster{
					{Name: "eu-1", CRD: "Established", Healthy: true, ServedRevision: ptr[int64](1), DesiredRevision: ptr[int64](1), Instances: ptr[int64](1), ReadyInstances: ptr[int64](1), ErrorInstances: ptr[int64](0)},
					{Name: "eu-2", CRD: "Established", Healthy: true, ServedRevision: ptr[int64](1), DesiredRevision: ptr[int64](1), Instances: ptr[int64](1), ReadyInstances: ptr[int64](1), ErrorInstances: ptr[int64](0)},
				}},
		},
	}
}

func matrixGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run the test with -update")
	require.Equal(t, string(want), got, "output differs from %s (rerun with -update if the change is intended)", path)
}

// The fleet matrix as DOT: one table, each cell filled by its health,
// with the revision served, instances ready and in error.
func TestMatrixAsDOT(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMatrixDOT(&b, fleetOfEveryCell(), Style{}))
	matrixGolden(t, "matrix.dot", b.String())
}

// The fleet matrix as SVG, drawn here: well-formed, every cluster a
// column, every cell's health a fill, messages as tooltips.
func TestMatrixAsSVG(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMatrixSVG(&b, fleetOfEveryCell(), Style{}))
	matrixGolden(t, "matrix.svg", b.String())
	requireWellFormed(t, b.Bytes())
	svg := b.String()
	for _, want := range []string{">eu-1</text>", ">us-1</text>", ">2→3<", ">Unreachable<", ">2 in error<", ">·<",
		`fill="` + colors[good] + `"`, `fill="` + colors[bad] + `"`, "<title>GET /readyz: context deadline exceeded</title>"} {
		assert.Contains(t, svg, want)
	}
}

// Names and messages are text, whatever they hold: nothing a cluster or a
// message says becomes markup.
func TestMatrixEscapesWhatItQuotes(t *testing.T) {
	f := &Fleet{Clusters: []string{`<script>alert("x")</script>`}, Graphs: []Graph{{Name: "a&b", Ready: "True", Clusters: []Cluster{
		{Name: `<script>alert("x")</script>`, CRD: "Error", Message: `</title><a href="x">`, ServedRevision: ptr[int64](1), DesiredRevision: ptr[int64](1)},
	}}}}
	var svg, dot bytes.Buffer
	require.NoError(t, WriteMatrixSVG(&svg, f, Style{}))
	require.NoError(t, WriteMatrixDOT(&dot, f, Style{}))
	requireWellFormed(t, svg.Bytes())
	for _, out := range []string{svg.String(), dot.String()} {
		assert.NotContains(t, out, "<script>")
		assert.NotContains(t, out, `<a href`)
		assert.Contains(t, out, "&lt;script&gt;")
		assert.Contains(t, out, "a&amp;b")
	}
}

// Past Style.MaxColumns, the matrix keeps the clusters with a problem and
// counts the others, as the terminal's does.
func TestMatrixPictureKeepsTheColumnsWithAProblem(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMatrixSVG(&b, fleetOfEveryCell(), Style{MaxColumns: 1}))
	assert.Contains(t, b.String(), ">eu-2</text>")
	assert.NotContains(t, b.String(), ">eu-1</text>")
	assert.Contains(t, b.String(), ">OTHERS</text>")
	requireWellFormed(t, b.Bytes())
}

func requireWellFormed(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err, "well-formed XML:\n%s", strings.TrimSpace(string(doc)))
	}
}
