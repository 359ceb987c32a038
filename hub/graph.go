package hub

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Graph is the unit of work of a FanOut: one CRD to put on every cluster,
// with what must hold on a cluster before it is put there. fleetgraph's
// own hub makes one from each compiled ResourceGraphDefinition; a platform
// that runs kro in each cluster can make one from kro's generated CRD.
type Graph struct {
	// Name names the graph: status, metrics, events and logs are keyed by
	// it, and a Serve of the same name replaces the graph. Required.
	Name string
	// Generation is the generation of the spec the CRD was made from (an
	// RGD's metadata.generation); ClusterStatus reports it.
	Generation int64
	// Revision, when positive, labels the CRD on each cluster
	// (fleetgraph.dev/graph-revision), so that a process that restarts can
	// tell which revision a cluster serves.
	Revision int64
	// CRD is the CustomResourceDefinition to apply; it must carry the
	// label app.kubernetes.io/managed-by=fleetgraph, by which a FanOut
	// knows its own CRDs. Required. The FanOut keeps per-CRD state (checks
	// shared among the clusters of one server): give a new object for a
	// new spec and never change one once handed over.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Kinds must all be served by a cluster before the CRD is applied
	// there: the kinds the CRD's controllers create or read. A cluster
	// missing any is CRDIncompatible and retried.
	Kinds []schema.GroupVersionKind
	// AllowBreaking lets a breaking schema change replace the served CRD.
	// Defaults to false: a change that could break stored objects or
	// clients is refused and the served CRD stays (CRDIncompatible).
	AllowBreaking bool
	// Check, if set, is asked with the other checks before the CRD is
	// applied on each cluster. An error wrapping ErrIncompatible makes the
	// cluster CRDIncompatible, any other CRDError; both are retried.
	// Clusters behind one API server and identity share its answer, so its
	// error must not name the cluster: the FanOut prefixes the cluster's
	// name. fleetgraph's hub type-checks the graph against the cluster's
	// OpenAPI schemas here.
	Check func(ctx context.Context, cl cluster.Cluster) error
	// Admission, if set, is a MutatingAdmissionPolicy to install with the
	// CRD on every cluster that serves the API. Defaults to none.
	Admission *Admission
}

// Admission is a MutatingAdmissionPolicy installed with a graph's CRD. An
// API server refuses every create that such a policy matches for a few
// seconds after it starts to serve a new group/version (until it has read
// the kind's schema), whatever the policy's failure policy, so the policy
// is bound only once a dry-run create of ProbeObject, matched by the probe
// policy alone, fails with the probe's own error, which names ProbePolicy:
// the schema was found. Until then, and where the cluster does not serve
// MutatingAdmissionPolicy, nothing is installed. Removing the policy
// (FanOut.RemoveAdmission) stops any binding still on its way. Every
// object must have its type meta (apiVersion and kind) set.
type Admission struct {
	// Policy and Binding are the MutatingAdmissionPolicy and its binding.
	Policy, Binding client.Object
	// ProbePolicy and ProbeBinding match ProbeObject alone and always
	// fail, with an error naming ProbePolicy.
	ProbePolicy, ProbeBinding client.Object
	// ProbeObject is an instance of the CRD's kind, created with dry run.
	ProbeObject client.Object
}

func (a *Admission) all() []client.Object {
	return []client.Object{a.Policy, a.Binding, a.ProbePolicy, a.ProbeBinding}
}

// kind is the kind g's CRD serves, at its storage version (its first
// served one if none is marked).
func (g Graph) kind() schema.GroupVersionKind {
	version := ""
	for _, v := range g.CRD.Spec.Versions {
		if v.Storage || (version == "" && v.Served) {
			version = v.Name
		}
	}
	return schema.GroupVersionKind{Group: g.CRD.Spec.Group, Version: version, Kind: g.CRD.Spec.Names.Kind}
}
