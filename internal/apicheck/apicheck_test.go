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
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\ntype Ignored = x.T\n"), 0o600))

	got, err := Findings(dir, Options{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "type Internal is an alias")

	got, err = Findings(dir, Options{AnyAlias: true, InternalValues: true})
	require.NoError(t, err)
	require.Len(t, got, 3, "Public and Named too")
	assert.Contains(t, got[2], "Named only names an internal value")
}
