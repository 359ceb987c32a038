package kcp

import (
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// LabelPrefix marks the labels of a Workspace object that become the labels
// of its cluster, with the prefix removed: "cluster.fleetgraph.dev/region:
// eu" on the Workspace is "region: eu" in Labels. It is the prefix the
// secret provider reads from kubeconfig Secrets, so placement selectors work
// the same over both.
const LabelPrefix = "cluster.fleetgraph.dev/"

// Labels returns the labels of the engaged workspace called name, read from
// its Workspace object in the parent (as last seen by the provider's
// informer): those under LabelPrefix, with the prefix removed. It returns
// nil when no such workspace is engaged. The map is a copy, and it follows
// relabelling without re-engaging the cluster.
func (p *Provider) Labels(name multicluster.ClusterName) map[string]string {
	p.lock.RLock()
	path, ok := p.paths[logicalcluster.Name(name)]
	parent, base := path.Split()
	w := p.watchers[parent.String()]
	p.lock.RUnlock()
	if !ok {
		return nil
	}
	if w == nil {
		return map[string]string{}
	}
	obj, exists, err := w.informer.GetStore().GetByKey(base)
	if err != nil || !exists {
		return map[string]string{}
	}
	u, isU := obj.(*unstructured.Unstructured)
	if !isU {
		return map[string]string{}
	}
	return workspaceLabels(u.GetLabels())
}

// workspaceLabels extracts the cluster labels of a Workspace's labels.
func workspaceLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if rest, ok := strings.CutPrefix(k, LabelPrefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}
