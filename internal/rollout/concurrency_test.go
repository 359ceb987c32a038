package rollout

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// simFleet is a fleet as the Planner moves it: a cluster takes a revision
// when the rollout's plan (rebuilt from the status alone, as after a
// restart) lets it, else keeps what it served; it turns healthy on a
// revision one step after it took it, unless it is broken for it.
type simFleet struct {
	waves   map[string]int32
	serves  map[string]int64
	since   map[string]int // step the cluster took what it serves
	broken  map[string]int64
	step    int
	history []map[string]int64
}

func newSimFleet(waves map[string]int32, rev int64) *simFleet {
	f := &simFleet{waves: waves, serves: map[string]int64{}, since: map[string]int{}, broken: map[string]int64{}}
	for name := range waves {
		f.serves[name] = rev
	}
	return f
}

// apply lets every cluster take the latest revision if the plan allows it,
// else the revision its fallback names.
func (f *simFleet) apply(ro *fgv1alpha1.GraphRollout, latest int64) {
	f.step++
	p := planOf(ro)
	for name, w := range f.waves {
		want := f.serves[name]
		switch {
		case p.decideOn(name, latest, w) == nil:
			want = latest
		case p.failed[name] > 0:
			want = p.failed[name]
		case p.back > 0 && w >= p.backFrom:
			want = p.back
		}
		if want != f.serves[name] {
			f.serves[name], f.since[name] = want, f.step
		}
	}
	snap := map[string]int64{}
	for k, v := range f.serves {
		snap[k] = v
	}
	f.history = append(f.history, snap)
}

func (f *simFleet) healthy(name string) bool {
	return f.broken[name] != f.serves[name] && f.step > f.since[name]
}

func (f *simFleet) observe() map[string]Observation {
	out := map[string]Observation{}
	for name := range f.waves {
		o := Observation{Revision: f.serves[name], Established: true, Instances: 1, Listed: 1}
		if f.healthy(name) {
			o.Ready = 1
		}
		out[name] = o
	}
	return out
}

// moving counts the clusters serving rev that are not healthy yet.
func (f *simFleet) moving(rev int64) []string {
	var out []string
	for _, name := range sortedKeys(f.waves) {
		if f.serves[name] == rev && !f.healthy(name) {
			out = append(out, name)
		}
	}
	return out
}

// done reports whether ro rolled rev out.
func done(ro *fgv1alpha1.GraphRollout, rev int64) bool {
	return ro.Status.TargetRevision == rev && ro.Status.Phase == fgv1alpha1.RolloutComplete
}

func oneLimitedWave(limit intstr.IntOrString) *fgv1alpha1.GraphRollout {
	return &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{
		Graph: "g", ProgressDeadlineSeconds: 60,
		Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100, MaxConcurrency: &limit}},
	}}
}

// With maxConcurrency 1 on a wave of four, one cluster at a time takes the
// new revision, in name order, each once the one before is healthy; the
// status lists the one moving and those that moved; the wave completes.
func TestMaxConcurrencyMovesOneClusterAtATime(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := oneLimitedWave(intstr.FromInt32(1))
	f := newSimFleet(map[string]int32{"a": 0, "b": 0, "c": 0, "d": 0}, 1)
	step(t0, ro, 1, f.waves, f.observe())

	p := planOf(ro)
	assert.ErrorIs(t, p.decideOn("a", 2, 0), ErrHeldBack, "a revision the rollout has not picked up does not reach a limited first wave at once")

	var order []string
	for i := 1; i < 20 && !done(ro, 2); i++ {
		step(metav1.NewTime(t0.Add(time.Duration(i)*time.Second)), ro, 2, f.waves, f.observe())
		f.apply(ro, 2)
		moving := f.moving(2)
		require.LessOrEqual(t, len(moving), 1, "step %d: %v move at once", i, moving)
		if len(moving) == 1 && (len(order) == 0 || order[len(order)-1] != moving[0]) {
			order = append(order, moving[0])
			require.Len(t, ro.Status.Moving, 1)
			assert.Equal(t, moving[0], ro.Status.Moving[0].Name, "the status names the cluster moving")
			assert.Len(t, ro.Status.Moved, len(order)-1)
			assert.Contains(t, ro.Status.Message, "moves "+moving[0]+" (maxConcurrency 1)")
			if moving[0] == "a" {
				require.Len(t, ro.Status.HoldingBack, 4)
				assert.Equal(t, "waits its turn (maxConcurrency 1), serves revision 1", ro.Status.HoldingBack[3].Message)
			}
		}
	}
	assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, ro.Status.Message)
	assert.Equal(t, []string{"a", "b", "c", "d"}, order)
	assert.Empty(t, ro.Status.Moving)
	assert.Empty(t, ro.Status.Moved, "a complete wave keeps no record")
	for _, name := range []string{"a", "b", "c", "d"} {
		assert.Equal(t, int64(2), f.serves[name])
	}
}

// A percent rounds up (50% of 3 is 2), and the limit holds whatever the
// clusters do.
func TestMaxConcurrencyPercentRoundsUp(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := oneLimitedWave(intstr.FromString("50%"))
	f := newSimFleet(map[string]int32{"a": 0, "b": 0, "c": 0}, 1)
	step(t0, ro, 1, f.waves, f.observe())
	peak := 0
	for i := 1; i < 20 && !done(ro, 2); i++ {
		step(metav1.NewTime(t0.Add(time.Duration(i)*time.Second)), ro, 2, f.waves, f.observe())
		f.apply(ro, 2)
		peak = max(peak, len(f.moving(2)))
	}
	assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase)
	assert.Equal(t, 2, peak)

	for _, v := range []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("bogus"), intstr.FromString("0%")} {
		assert.Equal(t, 1, concurrency(oneLimitedWave(v).Spec, 0, 10), "%s allows 1", v.String())
	}
}

// A moving cluster's deadline counts from its own start: one that never
// becomes healthy fails within maxFailures (and the next one starts), or,
// past the budget, fails the rollout with the clusters not started still
// on the stable revision.
func TestMaxConcurrencyDeadlineIsPerCluster(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, budget := range []int32{0, 1} {
		ro := oneLimitedWave(intstr.FromInt32(1))
		ro.Spec.Waves[0].MaxFailures = ptrTo(intstr.FromInt32(budget))
		ro.Spec.ProgressDeadlineSeconds = 10
		f := newSimFleet(map[string]int32{"a": 0, "b": 0, "c": 0, "d": 0}, 1)
		f.broken["b"] = 2
		step(t0, ro, 1, f.waves, f.observe())
		// Steps 7 s apart: the wave as a whole outlives a deadline, each
		// healthy cluster does not.
		for i := 1; i < 30 && ro.Status.Phase == fgv1alpha1.RolloutProgressing || i == 1; i++ {
			step(metav1.NewTime(t0.Add(time.Duration(7*i)*time.Second)), ro, 2, f.waves, f.observe())
			f.apply(ro, 2)
			require.LessOrEqual(t, len(f.moving(2)), 1)
		}
		if budget == 0 {
			assert.Equal(t, fgv1alpha1.RolloutFailed, ro.Status.Phase)
			assert.Contains(t, ro.Status.Message, `wave "all" not healthy within 10s: b: 0 of 1 instances Ready`)
			assert.Equal(t, map[string]int64{"a": 2, "b": 2, "c": 1, "d": 1}, f.serves, "clusters not started keep the stable revision")
			continue
		}
		assert.Equal(t, fgv1alpha1.RolloutComplete, ro.Status.Phase, ro.Status.Message)
		require.Len(t, ro.Status.Failed, 1)
		assert.Equal(t, "b", ro.Status.Failed[0].Name)
		assert.Equal(t, map[string]int64{"a": 2, "b": 1, "c": 2, "d": 2}, f.serves)
	}
}

// A wave without maxConcurrency moves every cluster at once and keeps no
// record of who moves, as before.
func TestAnUnlimitedWaveMovesAllAtOnce(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100}}}}
	f := newSimFleet(map[string]int32{"a": 0, "b": 0, "c": 0}, 1)
	step(t0, ro, 1, f.waves, f.observe())
	step(metav1.NewTime(t0.Add(time.Second)), ro, 2, f.waves, f.observe())
	f.apply(ro, 2)
	assert.Len(t, f.moving(2), 3)
	assert.Empty(t, ro.Status.Moving)
}

// A limit set on a wave in progress adopts the clusters that already took
// the target: none is sent back, and no new one starts while as many move.
func TestALimitSetMidWaveAdoptsTheClustersThatMoved(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := &fgv1alpha1.GraphRollout{Spec: fgv1alpha1.GraphRolloutSpec{Graph: "g", Waves: []fgv1alpha1.Wave{{Name: "all", Percent: 100}}}}
	f := newSimFleet(map[string]int32{"a": 0, "b": 0, "c": 0, "d": 0}, 1)
	step(t0, ro, 1, f.waves, f.observe())
	step(metav1.NewTime(t0.Add(time.Second)), ro, 2, f.waves, f.observe())
	f.apply(ro, 2) // every cluster takes revision 2
	f.step++       // a later look: a and b are healthy on it
	f.since["c"] = f.step
	f.serves["d"] = 1 // d's gate has not passed yet
	ro.Spec.Waves[0].MaxConcurrency = ptrTo(intstr.FromInt32(1))
	step(metav1.NewTime(t0.Add(2*time.Second)), ro, 2, f.waves, f.observe())
	assert.Equal(t, []string{"a", "b"}, ro.Status.Moved)
	require.Len(t, ro.Status.Moving, 1)
	assert.Equal(t, "c", ro.Status.Moving[0].Name)
	p := planOf(ro)
	for _, name := range []string{"a", "b", "c"} {
		assert.NoError(t, p.decideOn(name, 2, 0), "%s keeps the target", name)
	}
	assert.ErrorIs(t, p.decideOn("d", 2, 0), ErrHeldBack, "d waits its turn")
}

// A hub that restarts mid-wave engages its clusters one by one: a moving
// (or moved) cluster that is not engaged yet keeps its turn, so the
// clusters engaged first do not start in its place; once its deadline
// passes unseen, the next one may start.
func TestAMovingClusterNotEngagedYetKeepsItsTurn(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ro := oneLimitedWave(intstr.FromInt32(1))
	f := newSimFleet(map[string]int32{"a": 0, "b": 0, "c": 0, "d": 0}, 1)
	step(t0, ro, 1, f.waves, f.observe())
	for i := 1; i < 20 && !slices.ContainsFunc(ro.Status.Moving, func(m fgv1alpha1.RolloutMove) bool { return m.Name == "b" }); i++ {
		step(metav1.NewTime(t0.Add(time.Duration(i)*time.Second)), ro, 2, f.waves, f.observe())
		f.apply(ro, 2)
	}
	require.Equal(t, []string{"a"}, ro.Status.Moved)

	// Restarted: only c and d are engaged so far.
	engaged := map[string]int32{"c": 0, "d": 0}
	obs := f.observe()
	now := metav1.NewTime(t0.Add(30 * time.Second))
	step(now, ro, 2, engaged, obs)
	assert.Equal(t, []string{"b"}, moveNames(ro.Status.Moving), "b keeps its turn")
	assert.Equal(t, []string{"a"}, ro.Status.Moved)
	assert.ErrorIs(t, planOf(ro).decideOn("c", 2, 0), ErrHeldBack, "c does not start in b's place")

	step(metav1.NewTime(t0.Add(2*time.Minute)), ro, 2, engaged, obs)
	assert.Equal(t, []string{"c"}, moveNames(ro.Status.Moving), "past b's deadline, the next starts")
}

func moveNames(ms []fgv1alpha1.RolloutMove) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
