package instance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The grace of each unreachable cluster counts from when it was recorded;
// none is over without AbandonAfter, and the instance's own cluster never
// is.
func TestGraceOver(t *testing.T) {
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	inst.SetAnnotations(map[string]string{AnnotationUnreachableSince: `{"spoke-1":"2026-01-01T10:00:00Z","spoke-2":"2026-01-01T10:00:50Z","":"2026-01-01T09:00:00Z","bad":"yesterday"}`})
	now := time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)
	since := unreachableSince(inst, now)
	assert.Len(t, since, 3, "an unreadable time is dropped")

	e := &Engine{home: NewCluster("", nil)}
	assert.Empty(t, deleter{e}.graceOver(since, now), "AbandonAfter 0 waits forever")

	e.cfg.AbandonAfter = time.Minute
	assert.Equal(t, []string{"spoke-1"}, deleter{e}.graceOver(since, now), "spoke-1's minute is over, spoke-2's is not")
	e.cfg.AbandonAfter = time.Second
	assert.Equal(t, []string{"spoke-1", "spoke-2"}, deleter{e}.graceOver(since, now))
	assert.Empty(t, deleter{e}.graceOver(unreachableSince(&unstructured.Unstructured{Object: map[string]any{}}, now), now))
}

// The record is tenant-writable: a time before the deletion began counts
// from its deletionTimestamp, one in the future from now.
func TestUnreachableSinceIsBoundedByTheDeletion(t *testing.T) {
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	deleted := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	inst.SetDeletionTimestamp(&deleted)
	inst.SetAnnotations(map[string]string{AnnotationUnreachableSince: `{"old":"2000-01-01T00:00:00Z","later":"3000-01-01T00:00:00Z","honest":"2026-01-01T10:00:30Z"}`})
	now := time.Date(2026, 1, 1, 10, 1, 0, 0, time.UTC)
	since := unreachableSince(inst, now)
	assert.True(t, since["old"].Equal(deleted.Time), "%v", since["old"])
	assert.True(t, since["later"].Equal(now), "%v", since["later"])
	assert.True(t, since["honest"].Equal(deleted.Add(30*time.Second)), "%v", since["honest"])

	e := &Engine{home: NewCluster("", nil)}
	e.cfg.AbandonAfter = 2 * time.Minute
	assert.Empty(t, deleter{e}.graceOver(since, now), "no grace is over a minute into the deletion")
}

// A cluster is abandoned only when it is overdue and did not answer now.
func TestSortDowns(t *testing.T) {
	downs := []down{{cluster: "a"}, {cluster: "b"}, {cluster: "a"}}
	abandon, wait := sortDowns(downs, []string{"a", "c"})
	assert.Equal(t, []string{"a"}, abandon, "c answered: it is not abandoned")
	assert.Equal(t, []down{{cluster: "b"}}, wait)
}
