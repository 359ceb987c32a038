// Package crds reads, applies and waits for CustomResourceDefinitions: what
// the public hub package does with the CRDs it fans out, and what the hub
// does with fleetgraph's own CRDs on the hub cluster (GraphRevision,
// GraphRollout, ResourceGraphDefinition). CRDs are read live, as
// unstructured objects, so that no informer of CRDs is needed and a
// cluster's scheme need not know apiextensions.
package crds

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// EstablishTimeout bounds one wait for a CRD to be established.
	EstablishTimeout = 60 * time.Second
	// PollInterval is how often an applied CRD is checked for Established.
	PollInterval = 10 * time.Millisecond
	// RequestTimeout bounds each read of a wait.
	RequestTimeout = 15 * time.Second
)

// Get reads the named CRD live.
func Get(ctx context.Context, r client.Reader, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
	}
	return crd, nil
}

// ApplyObject renders crd as the intent to apply with server-side apply:
// type meta set, and no status or server-owned metadata. crd itself is
// not modified.
func ApplyObject(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	crd = crd.DeepCopy()
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	return ApplyIntent(crd)
}

// ApplyIntent renders a typed object, its type meta set, as the intent to
// apply with server-side apply: no status or server-owned metadata.
func ApplyIntent(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	u := &unstructured.Unstructured{Object: content}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "uid")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return u, nil
}

// Establishment reports whether crd is established and, if not, why.
func Establishment(crd *apiextensionsv1.CustomResourceDefinition) (bool, string) {
	msg := "no Established condition yet"
	for _, c := range crd.Status.Conditions {
		switch {
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			return true, ""
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			msg = "names not accepted: " + c.Message
		}
	}
	return false, msg
}

// WaitEstablished waits, up to timeout, until the named CRD is
// established, checking every interval with each read bounded by
// perRequest, and returns the CRD as it was seen established.
func WaitEstablished(ctx context.Context, r client.Reader, name string, interval, timeout, perRequest time.Duration) (*apiextensionsv1.CustomResourceDefinition, error) {
	var last string
	var seen *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		reqCtx, cancel := context.WithTimeout(ctx, perRequest)
		defer cancel()
		crd, err := Get(reqCtx, r, name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		established, msg := Establishment(crd)
		last, seen = msg, crd
		return established, nil
	})
	if err != nil {
		return nil, fmt.Errorf("CRD %s not established: %s: %w", name, last, err)
	}
	return seen, nil
}
