package input_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph/internal/cli/input"
)

func yamlOnly(name string) bool { return strings.HasSuffix(name, ".yaml") }

// collect walks paths and returns what was read, by name.
func collect(t *testing.T, o input.Options, paths ...string) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	err := input.Walk(o, paths, yamlOnly, func(name string, data []byte) error {
		got[name] = string(data)
		return nil
	})
	return got, err
}

// A directory gives its matching files, recursively; a link inside the
// tree is followed, one out of it is refused unless asked, and a link to
// a directory is not descended.
func TestWalkStaysInTheTreeGiven(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("outside"), 0o644))
	tree := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "sub", "a.yaml"), []byte("a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "notes.txt"), []byte("skipped"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join("sub", "a.yaml"), filepath.Join(tree, "inside.yaml")))
	require.NoError(t, os.Symlink(outside, filepath.Join(tree, "dir.yaml")))

	got, err := collect(t, input.Options{}, tree)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{filepath.Join(tree, "sub", "a.yaml"): "a", filepath.Join(tree, "inside.yaml"): "a"}, got)

	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(tree, "out.yaml")))
	_, err = collect(t, input.Options{}, tree)
	require.ErrorIs(t, err, input.ErrOutsideTree)
	got, err = collect(t, input.Options{FollowSymlinks: true}, tree)
	require.NoError(t, err)
	assert.Equal(t, "outside", got[filepath.Join(tree, "out.yaml")])

	// A link named on the command line is read like what it names, and a
	// link to a directory given as the root is walked.
	link := filepath.Join(t.TempDir(), "rgds")
	require.NoError(t, os.Symlink(tree+"/sub", link))
	got, err = collect(t, input.Options{}, link)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{filepath.Join(link, "a.yaml"): "a"}, got)
}

// A file or standard input over the limit is refused; at the limit it is
// read.
func TestWalkBoundsEveryInput(t *testing.T) {
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact.yaml")
	require.NoError(t, os.WriteFile(exact, []byte("12345678"), 0o644))
	got, err := collect(t, input.Options{MaxBytes: 8}, exact)
	require.NoError(t, err)
	assert.Equal(t, "12345678", got[exact])
	_, err = collect(t, input.Options{MaxBytes: 7}, exact)
	require.ErrorIs(t, err, input.ErrTooLarge)
	assert.EqualError(t, err, exact+": 8 bytes, larger than the limit of 7 bytes")

	got, err = collect(t, input.Options{MaxBytes: 3, Stdin: strings.NewReader("abc")}, "-")
	require.NoError(t, err)
	assert.Equal(t, "abc", got["-"])
	_, err = collect(t, input.Options{MaxBytes: 3, Stdin: strings.NewReader("abcd")}, "-")
	assert.EqualError(t, err, "standard input: more than 3 bytes: larger than the limit of 3 bytes")
}

// A document with more structure than MaxDocumentTokens is refused before
// it is parsed; one at the bound passes.
func TestCheckStructure(t *testing.T) {
	assert.NoError(t, input.CheckStructure("x.yaml:1", []byte(strings.Repeat("- a\n", input.MaxDocumentTokens/2))))
	err := input.CheckStructure("x.yaml:1", []byte(strings.Repeat("- a\n", input.MaxDocumentTokens/2+1)))
	require.ErrorIs(t, err, input.ErrTooComplex)
	assert.ErrorContains(t, err, "x.yaml:1: ")
	assert.ErrorIs(t, input.CheckStructure("x", []byte("["+strings.Repeat("[],", input.MaxDocumentTokens/2)+"]")), input.ErrTooComplex)
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{12: "12 bytes", 1 << 10: "1 KiB", 16 << 20: "16 MiB", 1536 << 10: "1.5 MiB", 100 << 20: "100 MiB", 3 << 30: "3 GiB"} {
		assert.Equal(t, want, input.Size(n))
	}
}
