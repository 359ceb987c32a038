package clusterprofile

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
)

// health judges the profile's ControlPlaneHealthy condition. It returns an
// error wrapping ErrUnhealthy once the condition has been False for
// UnhealthyGrace (from its lastTransitionTime); while it is False within
// the grace, it returns how long is left, to look again then; otherwise
// zero.
func (p *Provider) health(cp *ciav1alpha1.ClusterProfile) (time.Duration, error) {
	cond := meta.FindStatusCondition(cp.Status.Conditions, ciav1alpha1.ClusterConditionControlPlaneHealthy)
	if cond == nil || cond.Status != metav1.ConditionFalse {
		return 0, nil
	}
	left := cond.LastTransitionTime.Add(p.opts.UnhealthyGrace).Sub(p.now())
	if left > 0 {
		return left, nil
	}
	return 0, fmt.Errorf("%w: %s is False since %s (reason %q), longer than the grace of %s",
		ErrUnhealthy, ciav1alpha1.ClusterConditionControlPlaneHealthy,
		cond.LastTransitionTime.UTC().Format(time.RFC3339), cond.Reason, p.opts.UnhealthyGrace)
}
