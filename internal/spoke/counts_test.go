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

func TestTallyFollowsTheInstanceEvents(t *testing.T) {
	var tally *instanceTally
	assert.Equal(t, Count{}, tally.count(), "no instance watch yet")

	tally = &instanceTally{}
	tally.added(withState(contract.StateActive))
	tally.added(withState(""))
	tally.added(withState(contract.StateError))
	assert.Equal(t, Count{Total: 3, Ready: 1}, tally.count())

	tally.updated(withState(""), withState(contract.StateActive))
	tally.updated(withState(contract.StateActive), withState(contract.StateActive))
	assert.Equal(t, Count{Total: 3, Ready: 2}, tally.count())

	tally.updated(withState(contract.StateActive), withState(contract.StateDeleting))
	tally.deleted(withState(contract.StateDeleting))
	tally.deleted(withState(contract.StateActive))
	assert.Equal(t, Count{Total: 1, Ready: 0}, tally.count())
}
