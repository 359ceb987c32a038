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

// A reconcile writes the finalizer and then the status; a slow watch may
// deliver the first after the second was made. Both are our echoes, and
// our copy of the status stays preferred until its own version arrives.
func TestOwnWritesEchoEveryPendingWrite(t *testing.T) {
	w := newOwnWrites()
	base := &unstructured.Unstructured{}
	base.SetNamespace("ns")
	base.SetName("pair-1")
	base.SetUID("u1")
	finalizer := base.DeepCopy()
	finalizer.SetResourceVersion("6")
	status := base.DeepCopy()
	status.SetResourceVersion("7")
	w.wrote(finalizer)
	w.wrote(status)

	assert.True(t, w.echo(finalizer), "the finalizer write delivered after the status write")
	assert.Equal(t, "7", w.fresher(finalizer).GetResourceVersion(), "the cache holds the finalizer write only")
	assert.True(t, w.echo(status), "the status write")
	assert.False(t, w.echo(status), "echoed once")
	assert.Equal(t, "7", w.fresher(status).GetResourceVersion())

	for i := range maxOwnVersions + 2 {
		v := base.DeepCopy()
		v.SetResourceVersion(string(rune('a' + i)))
		w.wrote(v)
	}
	first := base.DeepCopy()
	first.SetResourceVersion("a")
	assert.False(t, w.echo(first), "beyond the bound, the oldest counts as foreign")
	last := base.DeepCopy()
	last.SetResourceVersion(string(rune('a' + maxOwnVersions + 1)))
	assert.True(t, w.echo(last))
}
