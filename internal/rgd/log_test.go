package rgd

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
)

// controller-runtime's "Reconciler error" for one RGD reaches the error
// level when the RGD's error starts or changes, and V(1) otherwise; other
// lines pass untouched.
func TestRGDReconcilerErrorsAreLoggedOncePerChange(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	inner := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		level := "error"
		if !strings.Contains(args, `"error"="`) || strings.Contains(args, `"level"=1`) {
			level, _, _ = strings.Cut(args, " ")
		}
		lines = append(lines, level)
	}, funcr.Options{Verbosity: 1})
	log := logr.New(quietSink{LogSink: inner.GetSink(), key: "rgd-log-test"}).WithValues("reconcileID", "1")

	log.Error(errors.New("conflict"), reconcilerError)
	log.Error(errors.New("conflict"), reconcilerError)
	log.Error(errors.New("timeout"), reconcilerError)
	log.Error(errors.New("timeout"), "something else")
	rgdFailures.Succeeded("rgd-log-test") // what forgetting does on success
	log.Error(errors.New("timeout"), reconcilerError)
	assert.Equal(t, []string{"error", `"level"=1`, "error", "error", "error"}, lines)
}
