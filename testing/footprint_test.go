package testing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

func TestMeasureFootprintSeesALiveAllocation(t *testing.T) {
	before, err := fgtesting.MeasureFootprint()
	require.NoError(t, err)
	assert.Positive(t, before.RSS)
	assert.Positive(t, before.Goroutines)
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = 1
	}
	after, err := fgtesting.MeasureFootprint()
	require.NoError(t, err)
	// Objects live at the first measurement may be collected by the
	// second, so allow a mebibyte of other churn around the 64 MiB.
	assert.GreaterOrEqual(t, after.HeapAlloc, before.HeapAlloc+63<<20, "a live 64 MiB slice is on the heap")
	assert.GreaterOrEqual(t, after.RSS, before.RSS+32<<20, "and resident")
	assert.Equal(t, byte(1), held[len(held)-1])
}
