package steps

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAClockReportsEachLapToTheContextsObserver(t *testing.T) {
	var got []string
	ctx := With(context.Background(), func(graph, cluster, step string, took time.Duration) {
		assert.GreaterOrEqual(t, took, time.Duration(0))
		got = append(got, graph+"/"+cluster+"/"+step)
	})
	c := Start(ctx, "g", "c")
	c.Lap(Kinds)
	c.Lap(Apply)
	assert.Equal(t, []string{"g/c/kinds", "g/c/apply"}, got)

	Start(context.Background(), "g", "c").Lap(Apply) // no observer: nothing to call
	assert.Len(t, got, 2)
}
