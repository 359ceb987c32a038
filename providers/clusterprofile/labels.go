package clusterprofile

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// clusterLabels are the labels of a profile's cluster: the profile's own
// labels, and each status property whose PropertyPrefix+name is a valid
// label key and whose value is a valid label value (a property wins over
// a label of the same key). skipped says, sorted, which properties were
// left out and why.
func clusterLabels(cp *ciav1alpha1.ClusterProfile) (labels map[string]string, skipped []string) {
	labels = maps.Clone(cp.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, prop := range cp.Status.Properties {
		key := PropertyPrefix + prop.Name
		switch {
		case len(validation.IsQualifiedName(key)) > 0:
			skipped = append(skipped, fmt.Sprintf("%q (its name is not valid in a label key)", prop.Name))
		case len(validation.IsValidLabelValue(prop.Value)) > 0:
			skipped = append(skipped, fmt.Sprintf("%q (its value is not a valid label value)", prop.Name))
		default:
			labels[key] = prop.Value
		}
	}
	slices.Sort(skipped)
	return labels, skipped
}

// labelsOf returns the labels of cp's cluster, and reports on cp the
// properties it skipped when they differ from those last reported.
func (p *Provider) labelsOf(cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName) map[string]string {
	labels, skipped := clusterLabels(cp)
	why := strings.Join(skipped, ", ")
	key := types.NamespacedName{Namespace: cp.Namespace, Name: cp.Name}
	p.lock.Lock()
	changed := p.skipped[key] != why
	p.skipped[key] = why
	p.lock.Unlock()
	if changed && why != "" {
		p.clusters.Warn(cp, name, ReasonPropertiesSkipped,
			errors.New("status.properties left out of the cluster's labels: "+why))
	}
	return labels
}
