package secret

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// SecretCluster maps a kubeconfig Secret to the cluster engaged from it,
// for hub graphs' targets written in KREP-012's form
// (kubeconfigSecretName, kubeconfigSecretNamespace); it implements
// sdk.SecretClusterMapper. It answers from the provider's memory and
// never reads the Secret: a Secret the provider does not read (another
// namespace, not selected by Options.LabelSelector, or whose cluster name
// another Secret holds) returns "" and false; one it reads whose cluster
// is not engaged (unreachable, or its kubeconfig refused) returns that
// cluster's name and false.
func (p *Provider) SecretCluster(namespace, name string) (multicluster.ClusterName, bool) {
	cluster, ok := p.clusters.NameOf(types.NamespacedName{Namespace: namespace, Name: name})
	if !ok {
		return "", false
	}
	return cluster, p.clusters.Engaged(cluster)
}
