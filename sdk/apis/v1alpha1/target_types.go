package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Target sends a resource to a cluster other than its instance's: a
// fleetgraph extension in the shape of kro's cluster-target proposals
// (KREP-012 on the RGD, KREP-013 on each resource). A graph with any target
// is a hub graph: its CRD and instances live on the hub, and each resource
// is written in the cluster its target names (the hub cluster when it has
// none).
type Target struct {
	// Cluster names the target cluster.
	// +optional
	Cluster *ClusterTarget `json:"cluster,omitempty"`

	// AllowedClusters, on spec.target only, narrows where targets computed
	// from an instance (${...}) may point: the clusters whose labels it
	// selects. It never widens what the platform allows.
	// +optional
	AllowedClusters *metav1.LabelSelector `json:"allowedClusters,omitempty"`
}

// ClusterTarget names one engaged cluster: by Name (a literal or a single
// ${...} string expression), or, as KREP-012 does, by the kubeconfig
// Secret the secret provider engages it from.
type ClusterTarget struct {
	// Name is the cluster's name as the provider engages it.
	// +optional
	Name string `json:"name,omitempty"`

	// KubeconfigSecretName and KubeconfigSecretNamespace name the
	// kubeconfig Secret of the cluster (KREP-012's form).
	// +optional
	KubeconfigSecretName string `json:"kubeconfigSecretName,omitempty"`
	// +optional
	KubeconfigSecretNamespace string `json:"kubeconfigSecretNamespace,omitempty"`
}
