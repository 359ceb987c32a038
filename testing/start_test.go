package testing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// recordingT is a TestingT that collects cleanups and failures.
type recordingT struct {
	cleanups []func()
	failures []string
}

func (r *recordingT) Helper()             {}
func (r *recordingT) Cleanup(f func())    { r.cleanups = append(r.cleanups, f) }
func (r *recordingT) Logf(string, ...any) {}
func (r *recordingT) Fatalf(f string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(f, args...))
}

func (r *recordingT) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestStartStopsOnCleanupAndReportsErrors(t *testing.T) {
	rt := &recordingT{}
	stopped := make(chan struct{})
	fgtesting.Start(rt, func(ctx context.Context) error {
		<-ctx.Done()
		close(stopped)
		return nil
	})
	rt.cleanup()
	<-stopped
	assert.Empty(t, rt.failures, "a clean stop is not a failure")

	rt = &recordingT{}
	fgtesting.Start(rt, func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("boom")
	})
	rt.cleanup()
	assert.Equal(t, []string{"stopping: boom"}, rt.failures)
}
