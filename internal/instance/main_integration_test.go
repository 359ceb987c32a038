//go:build integration

package instance_test

import (
	"fmt"
	"os"
	"testing"
)

// stopSharedFleet stops the fleet the integration tests share
// (drivers_integration_test.go), if one was started.
var stopSharedFleet func() error

// TestMain stops the shared fleet once every test is done.
func TestMain(m *testing.M) {
	code := m.Run()
	if stopSharedFleet != nil {
		if err := stopSharedFleet(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared fleet:", err)
			code = 1
		}
	}
	os.Exit(code)
}
