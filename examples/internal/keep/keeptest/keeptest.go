// Package keeptest runs a demo with -keep in a test and stops it again
// (package keep keeps demos' fleets).
package keeptest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Run starts demo in the background as if run with -keep (demo passes
// kept on as keep.Options.OnKept) and returns the kept fleet's
// kubeconfigs. stop interrupts the demo, as Ctrl-C does, and fails the
// test unless the demo then returns nil (fgtesting.StartStoppable); the
// test's cleanup calls it too. out is the demo's output, shown when the
// demo ends before keeping its fleet.
func Run(t *testing.T, out *Buffer, demo func(ctx context.Context, kept func(fgtesting.KubeconfigFiles)) error) (files fgtesting.KubeconfigFiles, stop func()) {
	t.Helper()
	keptFiles := make(chan fgtesting.KubeconfigFiles, 1)
	ended := make(chan error, 1)
	stop = fgtesting.StartStoppable(t, func(ctx context.Context) error {
		err := demo(ctx, func(f fgtesting.KubeconfigFiles) { keptFiles <- f })
		ended <- err
		return err
	})
	select {
	case files = <-keptFiles:
	case err := <-ended:
		t.Fatalf("the demo ended before keeping its fleet: %v\n%s", err, out.String())
	}
	return files, stop
}

// Buffer is a bytes.Buffer that a demo may write while a test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
