package rollout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// A wave of thousands of clusters does not write every name into a status
// message or an event: the first maxNamed are named, and the rest counted
// (status.holdingBack and status.failed list them all).
func TestMessagesNameAFewClustersAndCountTheRest(t *testing.T) {
	var names []string
	var bad []fgv1alpha1.RolloutCluster
	for i := range 3000 {
		names = append(names, fmt.Sprintf("cluster-%04d", i))
		bad = append(bad, fgv1alpha1.RolloutCluster{Name: names[i], Message: "0 of 1 instances Ready", Revision: 1})
	}
	for _, msg := range []string{named(names), explain(bad), failedNames(bad)} {
		assert.Contains(t, msg, "cluster-0000")
		assert.Contains(t, msg, fmt.Sprintf("cluster-%04d", maxNamed-1))
		assert.NotContains(t, msg, fmt.Sprintf("cluster-%04d", maxNamed))
		assert.True(t, strings.HasSuffix(msg, fmt.Sprintf(" and %d more", 3000-maxNamed)), msg)
		assert.Less(t, len(msg), 2000)
	}
	assert.Equal(t, "a, b", named([]string{"a", "b"}), "a few are all named")
	assert.Equal(t, "a: down", explain([]fgv1alpha1.RolloutCluster{{Name: "a", Message: "down"}}))
}
