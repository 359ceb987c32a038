package retrylog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetgraph/fleetgraph/internal/retrylog"
)

func TestAFailureIsNewsWhenItStartsOrChanges(t *testing.T) {
	var m retrylog.Memory[string]
	assert.True(t, m.Failed("a", "x", false), "a first failure")
	assert.False(t, m.Failed("a", "x", false), "the same again")
	assert.True(t, m.Failed("a", "y", false), "another message")
	assert.True(t, m.Failed("b", "y", false), "another key")
	assert.True(t, m.Failed("a", "y", true), "the caller knows it starts again")
	m.Succeeded("b")
	assert.True(t, m.Failed("b", "y", false), "after a success")
}

func TestMemoryIsBounded(t *testing.T) {
	m := retrylog.Memory[int]{MaxKeys: 2}
	m.Failed(1, "x", false)
	m.Failed(2, "x", false)
	m.Failed(3, "x", false) // forgets 1 and 2
	assert.True(t, m.Failed(1, "x", false))
	assert.False(t, m.Failed(3, "x", false))
}
