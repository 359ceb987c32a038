package sdk_test

import (
	"os"
	"testing"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestMain(m *testing.M) {
	fgtesting.SetupLogs()
	os.Exit(m.Run())
}
