package testing

import (
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// LogsEnv is the environment variable that turns controller logs on in
// tests that call SetupLogs.
const LogsEnv = "FLEETGRAPH_TEST_LOGS"

// SetupLogs sets controller-runtime's logger for a test binary, typically
// from TestMain: development logs on stderr when $FLEETGRAPH_TEST_LOGS is
// set, else nothing (controller logs are noise unless a failure needs them).
func SetupLogs() {
	if os.Getenv(LogsEnv) != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
		return
	}
	ctrl.SetLogger(logr.Discard())
}
