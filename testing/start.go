package testing

import (
	"context"
	"sync"
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
	StartStoppable(t, start)
}

// StartStoppable is Start returning a function that stops start before the
// test ends, e.g. to restart a hub, with the same checks; calling it again,
// or the cleanup after it, does nothing more.
func StartStoppable(t TestingT, start func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
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
	t.Cleanup(stop)
	return stop
}
