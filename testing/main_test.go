package testing_test

import (
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestMain(m *testing.M) {
	// Controller logs are noise unless a test fails in a way that needs
	// them: FLEETGRAPH_TEST_LOGS=1 turns them on.
	if os.Getenv("FLEETGRAPH_TEST_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	}
	os.Exit(m.Run())
}
