package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/hub"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// The hub's status records (see the package doc).
const (
	// LabelRecordOf marks a replica's record of one graph; its value is
	// the graph's name.
	LabelRecordOf = "fleetgraph.dev/fleet-status-of"
	// AnnotationRenewed is when the replica last confirmed the record
	// (RFC 3339).
	AnnotationRenewed = "fleetgraph.dev/renewed"
	// recordKey holds the record's clusters, a JSON list.
	recordKey = "clusters"
)

// Options say where to read.
type Options struct {
	// Graph names the one graph to read; empty reads every graph.
	Graph string
	// RecordNamespace holds the replicas' status records. Defaults to
	// kube-system, the hub's default.
	RecordNamespace string
	// RecordTTL is how long a record counts after its renewal, as the
	// hub's Options.Replicas.StatusTTL. Defaults to one minute, its default.
	RecordTTL time.Duration
	// Now tells the time. Defaults to time.Now.
	Now func() time.Time
}

// ErrNoGraph is returned when Options.Graph names no RGD on the hub.
var ErrNoGraph = errors.New("no such ResourceGraphDefinition on the hub")

// Read reads the fleet's state from the hub cluster c reaches.
func Read(ctx context.Context, c client.Client, o Options) (*Fleet, error) {
	if o.RecordNamespace == "" {
		o.RecordNamespace = "kube-system"
	}
	if o.RecordTTL == 0 {
		o.RecordTTL = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	rgds, err := readRGDs(ctx, c, o.Graph)
	if err != nil {
		return nil, err
	}
	rollouts, err := listFleetgraph(ctx, c, fgv1alpha1.GraphRolloutKind)
	if err != nil {
		return nil, err
	}
	records, err := readRecords(ctx, c, o)
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	seen := map[string]bool{}
	for _, rgd := range rgds {
		src := sources{rgd: rgd, rollout: rolloutOf(rollouts, rgd.Name), records: records[rgd.Name]}
		g := src.graph()
		for _, cl := range g.Clusters {
			seen[cl.Name] = true
		}
		f.Graphs = append(f.Graphs, g)
	}
	for name := range seen {
		f.Clusters = append(f.Clusters, name)
	}
	slices.Sort(f.Clusters)
	return f, nil
}

func readRGDs(ctx context.Context, c client.Client, name string) ([]*v1alpha1.ResourceGraphDefinition, error) {
	if name != "" {
		rgd := &v1alpha1.ResourceGraphDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, rgd)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("%w: %s", ErrNoGraph, name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading ResourceGraphDefinition %s: %w", name, err)
		}
		return []*v1alpha1.ResourceGraphDefinition{rgd}, nil
	}
	list := &v1alpha1.ResourceGraphDefinitionList{}
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing ResourceGraphDefinitions: %w", err)
	}
	out := make([]*v1alpha1.ResourceGraphDefinition, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	slices.SortFunc(out, func(a, b *v1alpha1.ResourceGraphDefinition) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// listFleetgraph lists the hub's objects of a fleetgraph.dev kind; none
// when the hub has not installed its CRD.
func listFleetgraph(ctx context.Context, c client.Client, kind string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fgv1alpha1.GroupVersion.WithKind(kind + "List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %ss: %w", kind, err)
	}
	return list.Items, nil
}

// readRecords returns, per graph, each cluster as the hub's records say:
// from the freshest live record that serves it, else from the freshest
// one handing it over (as the hub merges them).
func readRecords(ctx context.Context, c client.Client, o Options) (map[string]map[string]hub.ClusterStatus, error) {
	list := &corev1.ConfigMapList{}
	opts := []client.ListOption{client.InNamespace(o.RecordNamespace), client.HasLabels{LabelRecordOf}}
	if o.Graph != "" {
		opts = []client.ListOption{client.InNamespace(o.RecordNamespace), client.MatchingLabels{LabelRecordOf: o.Graph}}
	}
	if err := c.List(ctx, list, opts...); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil // not allowed to read them: the view has less detail
		}
		return nil, fmt.Errorf("listing the hub's status records in %s: %w", o.RecordNamespace, err)
	}
	now := o.Now()
	type dated struct {
		cs      hub.ClusterStatus
		renewed time.Time
	}
	better := func(a, b dated) bool { // a over b
		if a.cs.HandingOver != b.cs.HandingOver {
			return !a.cs.HandingOver
		}
		return a.renewed.After(b.renewed)
	}
	best := map[string]map[string]dated{}
	for _, cm := range list.Items {
		renewed, err := time.Parse(time.RFC3339Nano, cm.Annotations[AnnotationRenewed])
		if err != nil || now.Sub(renewed) > o.RecordTTL {
			continue // expired: the hub counts it for nothing either
		}
		var clusters []hub.ClusterStatus
		if json.Unmarshal([]byte(cm.Data[recordKey]), &clusters) != nil {
			continue
		}
		graph := cm.Labels[LabelRecordOf]
		if best[graph] == nil {
			best[graph] = map[string]dated{}
		}
		for _, cs := range clusters {
			d := dated{cs, renewed}
			if cur, ok := best[graph][cs.Cluster]; !ok || better(d, cur) {
				best[graph][cs.Cluster] = d
			}
		}
	}
	out := map[string]map[string]hub.ClusterStatus{}
	for graph, m := range best {
		out[graph] = map[string]hub.ClusterStatus{}
		for name, d := range m {
			out[graph][name] = d.cs
		}
	}
	return out, nil
}

// rolloutOf returns the GraphRollout that rules the graph: the oldest
// naming it, as the hub decides.
func rolloutOf(list []unstructured.Unstructured, graph string) *fgv1alpha1.GraphRollout {
	var out *fgv1alpha1.GraphRollout
	for _, u := range list {
		ro := &fgv1alpha1.GraphRollout{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro) != nil || ro.Spec.Graph != graph {
			continue
		}
		if out == nil || older(ro.ObjectMeta, out.ObjectMeta) {
			out = ro
		}
	}
	return out
}

func older(a, b metav1.ObjectMeta) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
