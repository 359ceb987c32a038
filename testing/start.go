package testing

import (
	"context"
	"time"
)

// StopTimeout is how long Start waits, on cleanup, for start to return.
const StopTimeout = time.Minute

// Start runs start (typically a manager's Start) in a goroutine until the
// test ends. On cleanup it cancels start's context and fails the test if
// start returned an error or did not return within StopTimeout: a component
// that does not stop when asked leaks into the next test.
func Start(t TestingT, start func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("stopping: %v", err)
			}
		case <-time.After(StopTimeout):
			t.Fatalf("did not stop within %s of its context ending", StopTimeout)
		}
	})
}
