package krodiff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// A Case is one behaviour comparison: an RGD, one instance of it, and the
// objects that must exist first (externalRef targets).
type Case struct {
	Name     string
	RGD      *unstructured.Unstructured
	Instance *unstructured.Unstructured
	Setup    []*unstructured.Unstructured
	// Update, when set, is a JSON merge patch applied to the instance once
	// both sides have settled (a document of kind InstanceUpdate, field
	// patch).
	Update []byte
	// InstanceResource is the generated CRD's resource.
	InstanceResource schema.GroupVersionResource
	// ChildKinds are the kinds the RGD's templates create.
	ChildKinds []schema.GroupVersionKind
}

// ReadCase reads a multi-document file: the RGD, the instance (the
// document of the RGD's kind) and setup objects, in any order.
func ReadCase(path string) (*Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Case{Name: strings.TrimSuffix(baseName(path), ".yaml")}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var docs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			docs = append(docs, obj)
		}
	}
	for _, d := range docs {
		if d.GetKind() == "ResourceGraphDefinition" {
			c.RGD = d
		}
	}
	if c.RGD == nil {
		return nil, fmt.Errorf("%s: no ResourceGraphDefinition", path)
	}
	kind, _, _ := unstructured.NestedString(c.RGD.Object, "spec", "schema", "kind")
	version, _, _ := unstructured.NestedString(c.RGD.Object, "spec", "schema", "apiVersion")
	group, _, _ := unstructured.NestedString(c.RGD.Object, "spec", "schema", "group")
	if group == "" {
		group = "kro.run"
	}
	c.InstanceResource = schema.GroupVersionResource{Group: group, Version: version, Resource: graph.Plural(kind)}
	for _, d := range docs {
		switch {
		case d == c.RGD:
		case d.GetKind() == kind:
			c.Instance = d
		case d.GetKind() == "InstanceUpdate":
			if c.Update, err = json.Marshal(d.Object["patch"]); err != nil {
				return nil, fmt.Errorf("%s: InstanceUpdate: %w", path, err)
			}
		default:
			c.Setup = append(c.Setup, d)
		}
	}
	if c.Instance == nil {
		return nil, fmt.Errorf("%s: no instance of kind %s", path, kind)
	}
	c.ChildKinds = templateKinds(c.RGD)
	return c, nil
}

func baseName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func templateKinds(rgd *unstructured.Unstructured) []schema.GroupVersionKind {
	resources, _, _ := unstructured.NestedSlice(rgd.Object, "spec", "resources")
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, r := range resources {
		m, _ := r.(map[string]any)
		tmpl, ok := m["template"].(map[string]any)
		if !ok {
			continue
		}
		u := unstructured.Unstructured{Object: tmpl}
		gvk := u.GroupVersionKind()
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out
}

// Snapshot is what an implementation made of one case: the instance's
// status and the children in its namespace, bookkeeping removed.
type Snapshot struct {
	// Exists is false once the instance is gone.
	Exists bool
	// Current is true when every condition on the instance was written for
	// its current generation: the implementation has seen its latest spec.
	Current  bool
	Status   map[string]any
	Children map[string]any // "Kind/name" -> normalised object
	// Names are the served kind's short names and categories, as its CRD
	// says: what kubectl lets a user type.
	Names map[string]any
}

// bookkeeping reports whether a label or annotation key is one
// implementation's own (kro's, including its ApplySet membership, or
// fleetgraph's), not the user's.
func bookkeeping(key string) bool {
	for _, p := range []string{"kro.run/", "internal.kro.run/", "applyset.kubernetes.io/", "fleetgraph.dev/"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return key == "app.kubernetes.io/managed-by"
}

// TakeSnapshot reads the instance and the children of c's kinds in ns.
func TakeSnapshot(ctx context.Context, dyn dynamic.Interface, c *Case, ns string, kindResource func(schema.GroupVersionKind) (schema.GroupVersionResource, bool, error)) (Snapshot, error) {
	s := Snapshot{Children: map[string]any{}}
	inst, err := dyn.Resource(c.InstanceResource).Namespace(ns).Get(ctx, c.Instance.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		s.Exists = true
		s.Current = observedCurrent(inst)
		s.Status = normaliseStatus(inst.Object["status"])
	case !apierrors.IsNotFound(err):
		return s, err
	}
	if s.Names, err = kindNames(ctx, dyn, c.InstanceResource); err != nil {
		return s, err
	}
	for _, gvk := range c.ChildKinds {
		gvr, namespaced, err := kindResource(gvk)
		if err != nil {
			return s, err
		}
		var list *unstructured.UnstructuredList
		if namespaced {
			list, err = dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		} else {
			list, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		}
		if err != nil {
			return s, err
		}
		for i := range list.Items {
			o := &list.Items[i]
			if isSetup(c, o) {
				continue
			}
			s.Children[o.GetKind()+"/"+o.GetName()] = normaliseChild(o)
		}
	}
	return s, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// kindNames returns the short names and categories of the CRD serving r.
func kindNames(ctx context.Context, dyn dynamic.Interface, r schema.GroupVersionResource) (map[string]any, error) {
	crd, err := dyn.Resource(crdResource).Get(ctx, r.Resource+"."+r.Group, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, field := range []string{"shortNames", "categories"} {
		if v, found, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", field); found {
			out[field] = v
		}
	}
	return out, nil
}

// observedCurrent reports whether inst has conditions and each names its
// current generation as observed.
func observedCurrent(inst *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(inst.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if g, ok := m["observedGeneration"].(int64); !ok || g != inst.GetGeneration() {
			return false
		}
	}
	return len(conds) > 0
}

func isSetup(c *Case, o *unstructured.Unstructured) bool {
	for _, s := range c.Setup {
		if s.GetKind() == o.GetKind() && s.GetName() == o.GetName() {
			return true
		}
	}
	return false
}

// normaliseChild keeps what the user asked for: everything but status and
// server- or controller-owned metadata.
func normaliseChild(o *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range o.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	md := map[string]any{"name": o.GetName()}
	if l := userKeys(o.GetLabels()); len(l) > 0 {
		md["labels"] = l
	}
	if a := userKeys(o.GetAnnotations()); len(a) > 0 {
		md["annotations"] = a
	}
	out["metadata"] = md
	if o.GetKind() == "Service" {
		if spec, ok := out["spec"].(map[string]any); ok {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
	}
	return out
}

func userKeys(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if !bookkeeping(k) {
			out[k] = v
		}
	}
	return out
}

// normaliseStatus keeps each condition's type, status, reason and message,
// sorted by type, and drops fields that only say when.
func normaliseStatus(raw any) map[string]any {
	st, _ := raw.(map[string]any)
	out := map[string]any{}
	for k, v := range st {
		if k != "conditions" && k != "observedGeneration" {
			out[k] = v
		}
	}
	conds, _ := st["conditions"].([]any)
	var norm []any
	for _, c := range conds {
		m, _ := c.(map[string]any)
		n := map[string]any{}
		for _, k := range []string{"type", "status", "reason", "message"} {
			if v, ok := m[k]; ok {
				n[k] = v
			}
		}
		norm = append(norm, n)
	}
	sort.Slice(norm, func(i, j int) bool {
		return fmt.Sprint(norm[i].(map[string]any)["type"]) < fmt.Sprint(norm[j].(map[string]any)["type"])
	})
	if len(norm) > 0 {
		out["conditions"] = norm
	}
	return out
}

// SnapshotDiff lists how two snapshots differ, one line each:
// "status: <path>: kro X, fleetgraph Y", "child: <Kind/name.path>: ..."
// and "kind: <shortNames|categories>: ...".
func SnapshotDiff(kro, fg Snapshot) []string {
	if kro.Exists != fg.Exists {
		return []string{fmt.Sprintf("instance: kro exists=%t, fleetgraph exists=%t", kro.Exists, fg.Exists)}
	}
	out := append(prefixed("status: ", jsonDiff(kro.Status, fg.Status)),
		prefixed("child: ", jsonDiff(kro.Children, fg.Children))...)
	return append(out, prefixed("kind: ", jsonDiff(kro.Names, fg.Names))...)
}

var widgetResource = schema.GroupVersionResource{Group: "krodiff.test", Version: "v1", Resource: "widgets"}

// runWidgetController stands in for the Widget kind's controller on one
// API server until ctx ends: every Widget without status gets phase
// Running, ready, an endpoint and its size as replicas. Both servers get the
// same stand-in, so both implementations observe the same child status.
func runWidgetController(ctx context.Context, dyn dynamic.Interface) {
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(widgetResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			w := &list.Items[i]
			if _, found, _ := unstructured.NestedString(w.Object, "status", "phase"); found {
				continue
			}
			size, found, _ := unstructured.NestedInt64(w.Object, "spec", "size")
			if !found {
				size = 1
			}
			w.Object["status"] = map[string]any{
				"phase": "Running", "ready": true, "replicas": size,
				"endpoint": w.GetName() + ".widgets.example",
			}
			_, _ = dyn.Resource(widgetResource).Namespace(w.GetNamespace()).UpdateStatus(ctx, w, metav1.UpdateOptions{})
		}
		return false, nil
	})
}
