package sdk_test

import (
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// maxKeptLogLines bounds what logOnFailure keeps: the last lines are the
// ones that explain a stall.
const maxKeptLogLines = 2000

// logOnFailure is a logger for a hub under test that keeps its last
// maxKeptLogLines lines and prints them only if the test fails, so that a
// failure seen once under load (a delete that never finished) comes with
// what the hub was doing.
func logOnFailure(t *testing.T) logr.Logger {
	var mu sync.Mutex
	var lines []string
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("the hub's last %d log lines:", len(lines))
		for _, l := range lines {
			t.Log(l)
		}
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if len(lines) == maxKeptLogLines {
			lines = lines[1:]
		}
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1, LogTimestamp: true})
}
