//go:build integration

package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The demo runs end to end: revision 2 reaches the canary wave while the
// main ring still serves revision 1, then every spoke.
func TestRolloutDemoRunsTwoWaves(t *testing.T) {
	fgtesting.SetupLogs()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out), out.String())
	assert.Regexp(t, regexp.MustCompile(`Progressing target r2 .* wave canary  spoke-1=r2 spoke-2=r1 spoke-3=r1`), out.String())
	assert.Regexp(t, regexp.MustCompile(`Complete    target r2  stable r2 .* spoke-1=r2 spoke-2=r2 spoke-3=r2`), out.String())
}
