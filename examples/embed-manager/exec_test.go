package main

import (
	"os"
	"testing"
)

// runMainEnv, set to "1", makes the test binary run this example's main
// instead of its tests: logs_integration_test.go runs the program as a
// user would, in a process of its own.
const runMainEnv = "FLEETGRAPH_EMBED_MANAGER_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
