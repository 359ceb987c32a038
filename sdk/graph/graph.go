package graph

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// This file is the contract between the compiler (this package) and its
// consumers (the spoke runtime and the hub). Change it deliberately.

// ErrPending is returned (wrapped) by evaluation when an expression needs a
// resource that has not been observed yet, so the caller should wait for it
// rather than report an error. Match it with errors.Is.
var ErrPending = errors.New("graph: data pending")

// Values holds what expressions can see during evaluation. The key "schema"
// maps to the instance object (its unstructured content: apiVersion, kind,
// metadata, spec, status). Every other key is a resource id mapped to the
// observed object (map[string]any) or, for a forEach collection, to the list
// ([]any) of observed objects. Absent keys mean "not observed yet", except
// "cluster" (VarCluster, see ClusterValue): where no resource takes that
// name, it is the cluster variable, and absent means the cluster named ""
// with no labels.
type Values map[string]any

// Graph is the compiled, immutable form of one ResourceGraphDefinition. It
// is safe for concurrent use by any number of goroutines and clusters;
// callers must not modify it or anything reachable from it. It holds what
// the RGD says and nothing its server decides later (a revision number, a
// removal): those travel beside it (spoke.Version).
type Graph struct {
	// Name is the ResourceGraphDefinition's name.
	Name string
	// Generation is the RGD's metadata.generation that was compiled.
	Generation int64
	// Instance describes the kind the generated CRD serves.
	Instance Instance
	// CRD is the generated CustomResourceDefinition, ready to apply.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Nodes holds every resource in topological order, ties broken by the
	// order of spec.resources.
	Nodes []*Node
	// Levels groups Nodes by depth: every dependency of a node in Levels[i]
	// is in some Levels[j] with j < i, so the nodes of one level may be
	// applied in parallel.
	Levels [][]*Node
	// DeletionWaves is Levels reversed: delete wave 0 first, and each wave
	// only after the previous one is gone.
	DeletionWaves [][]*Node
	// Extensions lists every use of something fleetgraph accepts and kro
	// v0.9.4 does not, sorted; empty for an RGD that kro accepts as is.
	// Always empty under Options.Strict, which refuses them instead.
	Extensions []Extension
	// Warnings lists what fleetgraph serves, as kro does, but that is
	// likely to cost more or do other than the author meant (see
	// Warning), sorted; empty when there is nothing to say.
	Warnings []Warning

	status     *statusProgram
	conditions []conditionProgram
	// clusterUse is how the expressions read the cluster variable.
	clusterUse ClusterUse
	// usesFleet: an expression reads the fleet variable (fleet.go).
	usesFleet bool
	byID      map[string]*Node
	// source and opts are what Compile was given, kept for CheckSchemas.
	source *v1alpha1.ResourceGraphDefinition
	opts   Options
}

// String describes the graph in one line, for logs.
func (g *Graph) String() string {
	return fmt.Sprintf("graph %q (%s, %d resources)", g.Name, g.Instance.GVK, len(g.Nodes))
}

// Instance describes the generated kind.
type Instance struct {
	GVK        schema.GroupVersionKind
	Plural     string // resource name, e.g. "webapps"
	Namespaced bool
}

// Node is one entry of spec.resources.
type Node struct {
	// ID is the resource id from the RGD.
	ID string
	// Index is the position in spec.resources.
	Index int
	// GVK is the child's kind: from the template's apiVersion/kind, or from
	// externalRef.
	GVK schema.GroupVersionKind
	// External is true for an externalRef: read, watched, never written or
	// deleted.
	External bool
	// Collection is true when the node has forEach iterators, or is an
	// externalRef by label selector: either way its observed value in Values
	// is a list ([]any), and readyWhen sees each item as `each`.
	Collection bool
	// Dependencies are the ids of the nodes this node's expressions
	// (template, includeWhen, forEach, externalRef) reference, sorted.
	Dependencies []string

	program *nodeProgram
	// target is the cluster the node's children go to; nil for the
	// instance's own (target.go).
	target *Target
}

// ExternalRef is an evaluated externalRef: either Name or Selector is set.
type ExternalRef struct {
	GVK       schema.GroupVersionKind
	Namespace string // empty: the instance's namespace for namespaced kinds
	Name      string
	Selector  *metav1.LabelSelector
}

// Limits returns the limits the graph was compiled with (Options.Limits,
// defaults filled in). Its evaluations enforce them; the runtime that
// serves it enforces the per-instance ones.
func (g *Graph) Limits() Limits { return g.opts.Limits }

// Node returns the node with the given id, or nil.
func (g *Graph) Node(id string) *Node { return g.byID[id] }

// Every evaluation method takes a context: its cancellation stops the
// evaluation, and the Budget it carries (WithBudget) is charged, so that
// all evaluations of one reconcile of one instance share Limits'
// per-instance bounds. Without a Budget, each call gets a fresh one. Every
// evaluation is bounded by the graph's Limits whatever the context; a
// bound that stops one returns an *Error wrapping ErrLimit.

// Status evaluates the RGD's status projections (spec.schema.status) and
// returns the fields to merge into the instance's status. A field whose
// expression needs a resource absent from vals is omitted (not an error).
// The fields together are bounded by Limits.MaxStatusBytes.
func (g *Graph) Status(ctx context.Context, vals Values) (map[string]any, error) {
	return g.status.eval(ctx, &g.opts.Limits, vals)
}

// Included evaluates includeWhen (all conditions must be true). A node with
// no includeWhen is included.
func (n *Node) Included(ctx context.Context, vals Values) (bool, error) {
	return n.program.included(ctx, vals)
}

// Iterations expands forEach into the cartesian product of the iterators'
// values, in order; each map binds iterator name -> item. A node without
// forEach returns exactly one empty map. More than 1000 combinations or 10
// iterators is an error. The combinations are counted as children in the
// context's Budget (Limits.MaxChildren).
func (n *Node) Iterations(ctx context.Context, vals Values) ([]map[string]any, error) {
	return n.program.iterations(ctx, vals)
}

// Render evaluates the template for one iteration (nil for a non-collection)
// and returns the desired object, without namespace defaulting or our
// ownership labels (the caller adds those). It returns an error wrapping
// ErrPending when a referenced resource is absent from vals. The object's
// size is charged to the context's Budget (Limits.MaxRenderedBytes).
func (n *Node) Render(ctx context.Context, vals Values, iteration map[string]any) (*unstructured.Unstructured, error) {
	return n.program.render(ctx, vals, iteration)
}

// Ref evaluates an externalRef node's reference.
func (n *Node) Ref(ctx context.Context, vals Values) (ExternalRef, error) {
	return n.program.ref(ctx, vals)
}

// Ready evaluates readyWhen (all conditions must be true) against observed,
// the object as read back from the cluster. For a collection it is called
// once per item (bound to `each` as well as to the node id). A node with no
// readyWhen is ready as soon as it exists.
func (n *Node) Ready(ctx context.Context, vals Values, observed map[string]any) (bool, error) {
	return n.program.ready(ctx, vals, observed)
}
