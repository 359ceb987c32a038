package spoke

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/contract"
)

func withState(state string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if state != "" {
		u.Object["status"] = map[string]any{"state": state}
	}
	return u
}

// The tally counts every instance, the ACTIVE ones and those in ERROR,
// and tells of every change that moves a count (and of no other).
func TestTallyFollowsTheInstanceEvents(t *testing.T) {
	var tally *instanceTally
	assert.Equal(t, Count{}, tally.count(), "no instance watch yet")

	told := 0
	tally = &instanceTally{changed: func() { told++ }}
	tally.added(withState(contract.StateActive))
	tally.added(withState(""))
	tally.added(withState(contract.StateError))
	assert.Equal(t, Count{Total: 3, Ready: 1, InError: 1}, tally.count())
	assert.Equal(t, 3, told)

	tally.updated(withState(""), withState(contract.StateActive))
	tally.updated(withState(contract.StateActive), withState(contract.StateActive))
	assert.Equal(t, Count{Total: 3, Ready: 2, InError: 1}, tally.count())
	assert.Equal(t, 4, told, "an update that changes no state moves no count")

	tally.updated(withState(contract.StateError), withState(contract.StateActive))
	assert.Equal(t, Count{Total: 3, Ready: 3}, tally.count(), "out of ERROR")

	tally.updated(withState(contract.StateActive), withState(contract.StateDeleting))
	tally.deleted(withState(contract.StateDeleting))
	tally.deleted(withState(contract.StateActive))
	assert.Equal(t, Count{Total: 1, Ready: 1}, tally.count())
	assert.Equal(t, 8, told)
}
