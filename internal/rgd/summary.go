package rgd

import (
	"github.com/fleetgraph/fleetgraph/hub"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Summary condenses s into the bounded form written to the RGD's status:
// counts, plus at most v1alpha1.MaxUnhealthyClusters unhealthy clusters, so
// the status stays small on a fleet of thousands.
func Summary(s hub.GraphStatus) *v1alpha1.FleetStatus {
	out := &v1alpha1.FleetStatus{Clusters: int32(len(s.Clusters))}
	for _, c := range s.Clusters {
		out.Instances += int64(c.Instances)
		out.ReadyInstances += int64(c.ReadyInstances)
		if c.CRD.Healthy() {
			out.Established++
		}
		if c.Healthy() {
			continue
		}
		out.Unhealthy++
		if len(out.UnhealthyClusters) < v1alpha1.MaxUnhealthyClusters {
			out.UnhealthyClusters = append(out.UnhealthyClusters, v1alpha1.ClusterHealth{
				Name: c.Cluster, State: stateWord(c), Message: c.Explain(),
			})
		}
	}
	return out
}

// stateWord is the word written to the RGD for an unhealthy cluster.
func stateWord(c hub.ClusterStatus) string {
	if c.CRD.Healthy() {
		return "Updating" // established, not switched over yet
	}
	return string(c.CRD)
}
