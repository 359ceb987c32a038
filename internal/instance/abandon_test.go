package instance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The grace of each unreachable cluster counts from when it was recorded;
// none is over without AbandonAfter, and the instance's own cluster never
// is.
func TestGraceOver(t *testing.T) {
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	inst.SetAnnotations(map[string]string{AnnotationUnreachableSince: `{"spoke-1":"2026-01-01T10:00:00Z","spoke-2":"2026-01-01T10:00:50Z","":"2026-01-01T09:00:00Z","bad":"yesterday"}`})
	since := unreachableSince(inst)
	assert.Len(t, since, 3, "an unreadable time is dropped")
	now := time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)

	e := &Engine{home: NewCluster("", nil)}
	assert.Empty(t, deleter{e}.graceOver(since, now), "AbandonAfter 0 waits forever")

	e.cfg.AbandonAfter = time.Minute
	assert.Equal(t, []string{"spoke-1"}, deleter{e}.graceOver(since, now), "spoke-1's minute is over, spoke-2's is not")
	e.cfg.AbandonAfter = time.Second
	assert.Equal(t, []string{"spoke-1", "spoke-2"}, deleter{e}.graceOver(since, now))
	assert.Empty(t, deleter{e}.graceOver(unreachableSince(&unstructured.Unstructured{Object: map[string]any{}}), now))
}
