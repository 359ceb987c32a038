package rollout

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// BenchmarkStepTenThousandClusters is one step of a one-wave rollout of
// 10,000 clusters past its deadline, half of them unhealthy, failed within
// the wave's budget of 50%, under a maxConcurrency of 1,000: what a
// replica decides on every look at a fleet that size. Each lookup of a
// cluster in the failed, moving and moved lists must not search them.
func BenchmarkStepTenThousandClusters(b *testing.B) {
	const n = 10000
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	waves := make(map[string]int32, n)
	healthy, failing := map[string]Observation{}, map[string]Observation{}
	for i := range n {
		name := fmt.Sprintf("fleetgraph-scale-%05d", i)
		waves[name] = 0
		healthy[name] = Observation{Revision: 1, Established: true, Serving: true, Instances: 1, Ready: 1, Listed: 1}
		failing[name] = Observation{Revision: 2, Established: true, Serving: true, Instances: 1, Ready: 1 - i%2, Listed: 1}
	}
	budget, limit := intstr.FromString("50%"), intstr.FromInt32(1000)
	spec := fgv1alpha1.GraphRolloutSpec{Graph: "g", ProgressDeadlineSeconds: 60,
		Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100, MaxFailures: &budget, MaxConcurrency: &limit}}}
	ro := &fgv1alpha1.GraphRollout{Spec: spec}
	step(t0, ro, 1, waves, healthy)
	step(metav1.NewTime(t0.Add(time.Second)), ro, 2, waves, failing)
	moving := make([]fgv1alpha1.RolloutMove, 0, n)
	for name := range waves {
		moving = append(moving, fgv1alpha1.RolloutMove{Name: name, Since: t0})
	}
	ro.Status.Moving = moving // every cluster let move, long ago
	st := ro.Status
	b.ResetTimer()
	for range b.N {
		ro.Status = *st.DeepCopy()
		step(metav1.NewTime(t0.Add(time.Hour)), ro, 2, waves, failing)
	}
	b.StopTimer()
	if len(ro.Status.Failed) != n/2 {
		b.Fatalf("%d failed, want %d: %s", len(ro.Status.Failed), n/2, ro.Status.Message)
	}
}
