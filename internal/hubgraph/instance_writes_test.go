package hubgraph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOwnWritesEchoAndFresher(t *testing.T) {
	w := newOwnWrites()
	cached := &unstructured.Unstructured{}
	cached.SetNamespace("ns")
	cached.SetName("pair-1")
	cached.SetUID("u1")
	cached.SetResourceVersion("5")
	ours := cached.DeepCopy()
	ours.SetResourceVersion("6")
	w.wrote(ours)

	assert.Equal(t, "6", w.fresher(cached).GetResourceVersion(), "the cache is behind our write")
	other := cached.DeepCopy()
	other.SetUID("u2")
	assert.Equal(t, "5", w.fresher(other).GetResourceVersion(), "another instance under the name")
	w.wrote(ours)
	assert.False(t, w.echo(cached), "a version we did not write")
	assert.True(t, w.echo(ours), "our own write coming back")
	assert.False(t, w.echo(ours), "echoed once")
	assert.Equal(t, "5", w.fresher(cached).GetResourceVersion(), "nothing of ours is left")
}
