//go:build integration

package spoke_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetgraph/fleetgraph/internal/spoke"
)

// answersRGD has a node of many large children that nothing reads
// (copies: random, so that no compression hides them) and a small one that
// its readyWhen and the status read.
const answersRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: answers
spec:
  schema:
    apiVersion: v1alpha1
    kind: Answers
    spec:
      count: integer | default=0
      size: integer | default=1
    status:
      shown: ${read.data.v}
  resources:
  - id: read
    readyWhen: ['${read.data.v == "hello"}']
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-read
      data:
        v: hello
  - id: copies
    forEach:
    - i: ${lists.range(schema.spec.count)}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name + "-copy-" + string(i)}
      data:
        v: ${random.seededString(schema.spec.size, schema.metadata.name + string(i))}
`

// The hub keeps the API server's answers only for nodes something reads:
// forty children of 128 KiB that nothing reads leave no answer held while
// the reconcile goes on (it held all of them, 5 MiB, until it ended) nor
// in the apply memory, while the node that readyWhen and the status read
// still shows its answer.
func TestAnswersNothingReadsAreNotKept(t *testing.T) {
	// 128 KiB each: 512 KiB took the instance past its 2 s evaluation
	// budget (Limits.InstanceTimeout) under -race on a loaded CI machine,
	// and the answers held are counted, not weighed.
	const count, size = 40, 128 << 10
	var mu sync.Mutex
	held := map[string]int{}
	spoke.OnAnswersHeld(t, func(node string, answers int) {
		mu.Lock()
		defer mu.Unlock()
		held[node] = max(held[node], answers)
	})
	c, g, rt := servedOnOneSpoke(t, "answers", answersRGD)
	require.NoError(t, c.Create(context.Background(), newInstance(g, "answers", "big", map[string]any{"count": int64(count), "size": int64(size)})))
	stateIs(t, c, g, "answers", "big", "ACTIVE")

	u, err := getInstance(t, c, g, "answers", "big")
	require.NoError(t, err)
	shown, _, _ := unstructured.NestedString(u.Object, "status", "shown")
	assert.Equal(t, "hello", shown, "the status reads the read node's answer")
	for i := range count {
		cm, err := configMap(c, "answers", fmt.Sprintf("big-copy-%d", i))
		require.NoError(t, err)
		v, _, _ := unstructured.NestedString(cm.Object, "data", "v")
		require.Len(t, v, size)
	}
	mu.Lock()
	assert.Equal(t, map[string]int{"read": 1, "copies": 0}, held, "answers held by a reconcile, by node")
	mu.Unlock()
	assert.Positive(t, spoke.KeptAnswerBytes(rt, g.Name), "the read node's answer is remembered")
}
