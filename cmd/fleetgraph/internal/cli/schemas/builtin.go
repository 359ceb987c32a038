package schemas

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
)

// KubernetesVersion is the version of kube-apiserver whose built-in kinds
// the snapshot holds.
const KubernetesVersion = "v1.36.3"

// snapshotDir holds one gzipped, stripped OpenAPI v3 document per built-in
// group-version, named after its path with "/" as "_" ("apis_apps_v1").
// TestBuiltinSnapshotMatchesTheAPIServer checks them against a real API
// server and rewrites them with -update.
//
//go:embed snapshot/*.json.gz
var snapshotDir embed.FS

var builtin = sync.OnceValues(func() (Docs, error) {
	entries, err := fs.ReadDir(snapshotDir, "snapshot")
	if err != nil {
		return nil, err
	}
	out := Docs{}
	for _, e := range entries {
		gz, err := snapshotDir.ReadFile("snapshot/" + e.Name())
		if err != nil {
			return nil, err
		}
		raw, err := gunzip(gz)
		if err != nil {
			return nil, fmt.Errorf("reading the built-in schemas %s: %w", e.Name(), err)
		}
		out[SnapshotPath(e.Name())] = raw
	}
	return out, nil
})

// Builtin returns the OpenAPI v3 documents of the kinds built into
// Kubernetes (KubernetesVersion). The result is shared: do not modify it.
func Builtin() (Docs, error) { return builtin() }

// SnapshotName is the file name of the snapshot of path's document.
func SnapshotName(path string) string { return strings.ReplaceAll(path, "/", "_") + ".json.gz" }

// SnapshotPath is the document path a snapshot file name holds.
func SnapshotPath(name string) string {
	return strings.ReplaceAll(strings.TrimSuffix(name, ".json.gz"), "_", "/")
}

func gunzip(gz []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Gzip compresses raw as the snapshot files are, deterministically (no
// name, no time).
func Gzip(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
