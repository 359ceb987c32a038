package spoke

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Of what the hub holds per spoke, the largest part the runtime never reads
// is the field sets of managedFields (which fields each manager owns): the
// runtime reads only the managers' names, to say who wrote an object it
// will not take over. The caches belong to the clusters the provider
// creates, so trimming them is the embedder's (or provider's) choice:
// TrimCache is the cluster.Option that does it.

// TrimManagedFields is a cache transform that keeps each managedFields
// entry's manager, operation, API version, subresource and time, and drops
// its field set. Objects that are not metav1.Objects pass unchanged.
func TrimManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	mf := o.GetManagedFields()
	if len(mf) == 0 {
		return obj, nil
	}
	for i := range mf {
		mf[i].FieldsV1 = nil
	}
	o.SetManagedFields(mf)
	return obj, nil
}

// TrimCache is a cluster.Option that makes TrimManagedFields the default
// transform of the cluster's cache, unless the options set one already.
// Measured with the reference workload, it saves about a quarter of the
// hub's heap per instance.
func TrimCache(o *cluster.Options) {
	if o.Cache.DefaultTransform == nil {
		o.Cache.DefaultTransform = TrimManagedFields
	}
}
