// Package keeptest runs a demo with -keep in a test and stops it again
// (package keep keeps demos' fleets).
package keeptest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// Run starts demo in the background as if run with -keep (demo passes
// kept on as Options.OnKept) and returns the kept fleet's kubeconfigs.
// stop interrupts the demo, as Ctrl-C does, and fails the test unless the
// demo then returns nil within a minute. out is the demo's output, shown
// when it fails.
func Run(t *testing.T, out *Buffer, demo func(ctx context.Context, kept func(fgtesting.KubeconfigFiles)) error) (files fgtesting.KubeconfigFiles, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	keptFiles := make(chan fgtesting.KubeconfigFiles, 1)
	done := make(chan error, 1)
	go func() { done <- demo(ctx, func(f fgtesting.KubeconfigFiles) { keptFiles <- f }) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the kept demo ended with %v\n%s", err, out.String())
				}
			case <-time.After(time.Minute):
				t.Error("the kept demo did not stop within a minute of its interruption")
			}
		})
	}
	t.Cleanup(stop)
	select {
	case files = <-keptFiles:
	case err := <-done:
		once.Do(cancel) // nothing left to stop
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
