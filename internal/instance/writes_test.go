package instance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestOwnWritesEchoAndFresher(t *testing.T) {
	w := NewWrites()
	cached := writtenInstance("pair-1", "u1")
	cached.SetResourceVersion("5")
	ours := cached.DeepCopy()
	ours.SetResourceVersion("6")
	w.wrote(ours)

	assert.Equal(t, "6", w.Fresher(cached).GetResourceVersion(), "the cache is behind our write")
	other := cached.DeepCopy()
	other.SetUID("u2")
	assert.Equal(t, "5", w.Fresher(other).GetResourceVersion(), "another instance under the name")
	w.wrote(ours)
	assert.False(t, w.Echo(cached), "a version we did not write")
	assert.True(t, w.Echo(ours), "our own write coming back")
	assert.False(t, w.Echo(ours), "echoed once")
	assert.Equal(t, "5", w.Fresher(cached).GetResourceVersion(), "nothing of ours is left")
}

// A reconcile writes the finalizer and then the status; a slow watch may
// deliver the first after the second was made. Both are our echoes, and
// our copy of the status stays preferred until its own version arrives.
func TestOwnWritesEchoEveryPendingWrite(t *testing.T) {
	w := NewWrites()
	base := writtenInstance("pair-1", "u1")
	finalizer := base.DeepCopy()
	finalizer.SetResourceVersion("6")
	status := base.DeepCopy()
	status.SetResourceVersion("7")
	w.wrote(finalizer)
	w.wrote(status)

	assert.True(t, w.Echo(finalizer), "the finalizer write delivered after the status write")
	assert.Equal(t, "7", w.Fresher(finalizer).GetResourceVersion(), "the cache holds the finalizer write only")
	assert.True(t, w.Echo(status), "the status write")
	assert.False(t, w.Echo(status), "echoed once")
	assert.Equal(t, "7", w.Fresher(status).GetResourceVersion())

	for i := range maxOwnVersions + 2 {
		v := base.DeepCopy()
		v.SetResourceVersion(string(rune('a' + i)))
		w.wrote(v)
	}
	first := base.DeepCopy()
	first.SetResourceVersion("a")
	assert.False(t, w.Echo(first), "beyond the bound, the oldest counts as foreign")
	last := base.DeepCopy()
	last.SetResourceVersion(string(rune('a' + maxOwnVersions + 1)))
	assert.True(t, w.Echo(last))
}

// The watch may deliver our write before its answer reaches us: an event
// that arrives while the write is in flight is held, and requeues the
// instance once the write ends only if it was not that write (or the write
// failed).
func TestOwnWritesHoldEventsDeliveredBeforeTheAnswer(t *testing.T) {
	newQueue := func() *requeues { return &requeues{} }
	version := func(rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName("pair-1")
		u.SetUID("u1")
		u.SetResourceVersion(rv)
		return u
	}
	key := types.NamespacedName{Namespace: "ns", Name: "pair-1"}

	w, q := NewWrites(), newQueue()
	assert.False(t, w.Hold(version("6"), q.requeue), "no write in flight: nothing held")
	w.begin(key)
	assert.True(t, w.Hold(version("7"), q.requeue), "delivered while our write is in flight")
	w.end(key, version("7"))
	assert.Zero(t, q.n, "it was our write: nothing requeued")
	assert.False(t, w.Echo(version("7")), "already delivered: not awaited again")
	assert.Equal(t, "7", w.Fresher(version("7")).GetResourceVersion())

	w, q = NewWrites(), newQueue()
	w.begin(key)
	assert.True(t, w.Hold(version("8"), q.requeue))
	w.end(key, version("9"))
	assert.Equal(t, 1, q.n, "somebody else's write: requeued once ours ended")
	assert.False(t, w.Echo(version("9")), "as after any foreign event, our copy is dropped: the cache may be newer")

	w, q = NewWrites(), newQueue()
	w.begin(key)
	assert.True(t, w.Hold(version("10"), q.requeue))
	w.end(key, nil)
	assert.Equal(t, 1, q.n, "our write failed: what came is somebody else's")

	// A tenant writing its instance fast while our write hangs: the held
	// events are bounded, and the instance is requeued even when our
	// write's own version was among those past the bound.
	w, q = NewWrites(), newQueue()
	w.begin(key)
	for i := range 1000 {
		assert.True(t, w.Hold(version(fmt.Sprint(100+i)), q.requeue))
	}
	assert.LessOrEqual(t, len(w.flight[key].early), maxEarly)
	w.end(key, version("100"))
	assert.Equal(t, 1, q.n, "the foreign writes past the bound still requeue")

	// A driver that requeues by its own rules (the spoke) holds with no
	// requeue: our write's version delivered before its answer is not
	// remembered as still to come (it would be kept for as long as the
	// instance lives); after a foreign one delivered before our answer,
	// ours is the newest and is kept, so that a reconcile never works
	// from an older copy than one it wrote.
	w = NewWrites()
	w.begin(key)
	assert.True(t, w.Hold(version("20"), nil))
	w.end(key, version("20"))
	assert.Zero(t, w.Len(), "delivered before its answer: nothing left to await")
	w.begin(key)
	assert.True(t, w.Hold(version("21"), nil))
	w.end(key, version("22"))
	assert.Equal(t, "22", w.Fresher(version("21")).GetResourceVersion(), "ours is newer than what the watch delivered")

	// A write that fails or panics ends: later events are not held.
	w, q = NewWrites(), newQueue()
	assert.Error(t, w.writing(key, version("11"), func() error { return errors.New("refused") }))
	assert.False(t, w.Hold(version("12"), q.requeue), "a failed write is no longer in flight")
	assert.Panics(t, func() { _ = w.writing(key, version("13"), func() error { panic("boom") }) })
	assert.False(t, w.Hold(version("14"), q.requeue), "a write that panicked is no longer in flight")
	assert.False(t, w.Echo(version("13")), "nor taken for ours")
	assert.NoError(t, w.writing(key, version("15"), func() error { return nil }))
	assert.True(t, w.Echo(version("15")), "a write that succeeded is ours")
}

// requeues counts the requeues Hold asks for.
type requeues struct{ n int }

func (r *requeues) requeue() { r.n++ }

// An engine serves a graph on one cluster, often for one instance or two:
// once its writes came back it must hold no storage for them (a Go map
// keeps its storage after its last delete), and remember again after.
func TestIdleWritesHoldNothing(t *testing.T) {
	w := NewWrites()
	inst := writtenInstance("app", "u1")
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	for range 2 {
		assert.NoError(t, w.writing(key, inst, func() error {
			inst.SetResourceVersion(inst.GetResourceVersion() + "1")
			return nil
		}))
		assert.Equal(t, 1, w.Len(), "the write is remembered until it comes back")
		assert.True(t, w.Echo(inst), "our write coming back")
		assert.Zero(t, w.Len())
		assert.Nil(t, w.m, "no storage kept for delivered writes")
		assert.Nil(t, w.flight, "no storage kept for writes no longer in flight")
	}
	assert.Error(t, w.writing(key, inst, func() error { return errors.New("refused") }))
	assert.Nil(t, w.flight, "a failed write leaves nothing in flight")
}

// writtenInstance is an instance named name in namespace ns, with uid.
func writtenInstance(name string, uid types.UID) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(uid)
	return u
}
