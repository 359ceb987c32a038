package graph

import (
	"context"
	"fmt"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// Targets are a fleetgraph extension in the shape of kro's cluster-target
// proposals: a resource's `target: {cluster: {name: ...}}` (KREP-013), or
// the RGD's spec.target as the default of every resource without one
// (KREP-012), sends the resource to another cluster. A graph with any
// target is a hub graph (Graph.IsHubGraph): its instances live on the hub
// and a runtime there writes each resource into its target cluster.
//
// A target may read only the instance (schema): every target of an
// instance is then known before anything of it is written, so a runtime
// can refuse an instance whose targets it does not allow without having
// written anything anywhere.

// targetFeature names the extension in Graph.Extensions.
const targetFeature = "target (a resource written in another cluster)"

// Target is a resource's target as compiled: the cluster its children are
// written in. Exactly one of Name, Expression and SecretName is set.
type Target struct {
	// Name is a literal cluster name.
	Name string
	// Expression is the name as written, when it is computed from the
	// instance (a ${} string expression); Computed reports it.
	Expression string
	// SecretName and SecretNamespace name a kubeconfig Secret (KREP-012's
	// form), which the cluster provider maps onto the cluster it engages
	// from that Secret.
	SecretName, SecretNamespace string

	name tmpl // the compiled name; nil for a Secret
}

// Computed reports whether the target's cluster is computed from the
// instance: a runtime must hold it to a set the platform allows.
func (t *Target) Computed() bool { return t.Expression != "" }

// ResolvedTarget is a target evaluated for one instance.
type ResolvedTarget struct {
	// Cluster is the cluster's name; empty for a Secret target.
	Cluster string
	// SecretName and SecretNamespace are the Secret's, for a Secret target.
	SecretName, SecretNamespace string
	// Computed is copied from the Target.
	Computed bool
}

// IsHubGraph reports whether any resource has a target: the graph's
// instances are then served on the hub, not on each spoke.
func (g *Graph) IsHubGraph() bool {
	for _, n := range g.Nodes {
		if n.target != nil {
			return true
		}
	}
	return false
}

// Targets returns the nodes that have a target, in topological order.
func (g *Graph) Targets() []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.target != nil {
			out = append(out, n)
		}
	}
	return out
}

// AllowedClusters is the RGD's spec.target.allowedClusters: the selector
// that narrows where computed targets may point; nil when the RGD sets
// none.
func (g *Graph) AllowedClusters() *metav1.LabelSelector {
	if t := g.source.Spec.Target; t != nil && t.AllowedClusters != nil {
		return t.AllowedClusters.DeepCopy()
	}
	return nil
}

// Target returns the node's target, or nil when the node is written in
// its instance's cluster.
func (n *Node) Target() *Target { return n.target }

// ResolveTarget evaluates the node's target for the instance in vals
// (only schema and fleet are read) and, for a collection, one of its
// Iterations (nil otherwise). A node without a target returns the zero
// ResolvedTarget.
func (n *Node) ResolveTarget(ctx context.Context, vals Values, iteration map[string]any) (ResolvedTarget, error) {
	t := n.target
	if t == nil {
		return ResolvedTarget{}, nil
	}
	if t.name == nil {
		return ResolvedTarget{SecretName: t.SecretName, SecretNamespace: t.SecretNamespace}, nil
	}
	sc := n.program.scope(ctx, vals, n.program.typedIteration(iteration))
	defer sc.done()
	sc.bound(newSizer("the target", "MaxValueBytes", n.program.limits.MaxValueBytes))
	name, err := evalString(sc, t.name, "target.cluster.name")
	if err != nil {
		return ResolvedTarget{}, err
	}
	if name == "" {
		return ResolvedTarget{}, &Error{ResourceID: n.ID, Path: "target.cluster.name", Expression: truncate(t.Expression, n.program.limits.MaxMessageExpression),
			Err: errorf(ErrEvaluation, "the target cluster's name is empty")}
	}
	return ResolvedTarget{Cluster: name, Computed: t.Computed()}, nil
}

// targetOf returns the target that applies to src: its own, else the
// RGD's default (when that names a cluster).
func targetOf(rgd *v1alpha1.ResourceGraphDefinition, src *v1alpha1.Resource) (*v1alpha1.Target, string) {
	if src.Target != nil {
		return src.Target, "target"
	}
	if t := rgd.Spec.Target; t != nil && t.Cluster != nil {
		return t, "spec.target"
	}
	return nil, ""
}

// compileTarget compiles r's target, if any, into its node. The name's
// expressions are compiled in env, the graph's, and may read only schema.
func (c *resourceCompiler) compileTarget(rgd *v1alpha1.ResourceGraphDefinition, r *resource, env *cel.Env) {
	src, path := targetOf(rgd, r.src)
	if src == nil {
		return
	}
	fail := func(p, written string, err error) {
		c.diag.fail(&Error{ResourceID: r.node.ID, Path: p, Expression: written, Err: err})
	}
	c.diag.extension(r.node.ID, path, targetFeature)
	if path == "target" && src.AllowedClusters != nil {
		fail(path+".allowedClusters", "", errorf(ErrInvalid, "allowedClusters is set on spec.target only"))
	}
	ct := src.Cluster
	if ct == nil {
		fail(path+".cluster", "", errorf(ErrInvalid, "required: the target's cluster"))
		return
	}
	bySecret := ct.KubeconfigSecretName != "" || ct.KubeconfigSecretNamespace != ""
	switch {
	case (ct.Name != "") == bySecret:
		fail(path+".cluster", "", errorf(ErrInvalid, "exactly one of name and kubeconfigSecretName is required"))
		return
	case bySecret && (ct.KubeconfigSecretName == "" || ct.KubeconfigSecretNamespace == ""):
		fail(path+".cluster", "", errorf(ErrInvalid, "kubeconfigSecretName and kubeconfigSecretNamespace go together"))
		return
	case bySecret:
		r.node.target = &Target{SecretName: ct.KubeconfigSecretName, SecretNamespace: ct.KubeconfigSecretNamespace}
		return
	}
	c.compileTargetName(r, env, path+".cluster.name", ct.Name, fail)
}

// compileTargetName compiles a target's cluster name: a literal, or
// expressions that read only schema, fleet and the resource's forEach
// iterators (whose own expressions must then read only schema and fleet),
// and make a string.
func (c *resourceCompiler) compileTargetName(r *resource, env *cel.Env, path, written string, fail func(p, written string, err error)) {
	tc := &templateCompiler{exprs: c.exprs, env: env, resourceID: r.node.ID, check: c.checkField}
	name := tc.value(path, written, apiservercel.StringType)
	progs := name.programs(nil)
	if len(progs) == 0 {
		r.node.target = &Target{Name: written, name: name}
		return
	}
	for _, p := range progs {
		if ref, ok := onlyInstanceAndFleet(p); !ok {
			fail(path, written, errorf(ErrReference, "a target may read only schema, fleet and the resource's iterators, not %q: every target is resolved before anything is written", ref))
			return
		}
		if p.cluster != 0 {
			fail(path, written, errorf(ErrReference, "a target may read only schema, not %q", VarCluster))
			return
		}
	}
	for _, it := range r.node.program.iterators {
		if ref, ok := onlyInstanceAndFleet(it.p); !ok {
			fail(it.path, it.p.written, errorf(ErrReference, "the forEach of a resource with a computed target may read only schema and fleet, not %q: "+
				"every target is resolved before anything is written", ref))
			return
		}
	}
	r.node.target = &Target{Expression: written, name: name}
}

// onlyInstanceAndFleet reports whether p reads nothing but schema and
// fleet from Values, or names the first other thing it reads.
func onlyInstanceAndFleet(p *program) (string, bool) {
	for _, ref := range p.refs {
		if ref != varSchema && ref != VarFleet {
			return ref, false
		}
	}
	return "", true
}

// String describes the target for messages.
func (t *Target) String() string {
	switch {
	case t.Name != "":
		return fmt.Sprintf("cluster %q", t.Name)
	case t.Expression != "":
		return fmt.Sprintf("cluster %s", t.Expression)
	default:
		return fmt.Sprintf("the cluster of Secret %s/%s", t.SecretNamespace, t.SecretName)
	}
}

// checkRGDTarget records spec.target, whatever it holds, as a use of the
// extension: an RGD that only narrows computed targets is still not kro's.
func checkRGDTarget(rgd *v1alpha1.ResourceGraphDefinition, diag *diagnostics) {
	if rgd.Spec.Target != nil {
		diag.extension("", "spec.target", targetFeature)
	}
}
