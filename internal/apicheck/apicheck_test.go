package apicheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindings(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	"time"

	"example.com/m/internal/x"
)

type Internal = x.T
type Public = time.Duration
type own struct{}

const Named = x.C
const Own = 1
const DefaultWorkers = x.DefaultWorkers
var DefaultVar = x.V
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\ntype Ignored = x.T\n"), 0o600))

	got, err := Findings(dir, Options{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "type Internal is an alias")

	got, err = Findings(dir, Options{AnyAlias: true, InternalValues: true})
	require.NoError(t, err)
	require.Len(t, got, 5, "Public, Named and both defaults too")
	assert.Contains(t, got[2], "Named only names an internal value")

	got, err = Findings(dir, Options{AnyAlias: true, InternalValues: true, EngineDefaults: true})
	require.NoError(t, err)
	require.Len(t, got, 4, "a Default constant may name the engine's; a variable may not")
	assert.Contains(t, got[3], "DefaultVar only names an internal value")
}
