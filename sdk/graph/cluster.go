package graph

import (
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// The cluster variable is a fleetgraph extension: every expression of a
// graph served on a cluster may read that cluster's name and labels, so
// that one RGD can say "3 replicas where tier is prod" without a copy per
// cluster. It is typed like schema (an object whose fields are known), so
// a misspelt field fails the compile. kro v0.9.4 does not reserve the
// word: an RGD with a resource id or a forEach iterator named cluster
// keeps kro's meaning, and the variable is not offered to it.

const (
	// VarCluster is the name of the cluster variable, and its key in
	// Values.
	VarCluster = "cluster"
	// clusterTypeName is the CEL type of the cluster variable.
	clusterTypeName = "fleetgraph.Cluster"
	// clusterFeature names the extension in Graph.Extensions.
	clusterFeature = "the cluster variable"
)

// clusterDecl is the type of the cluster variable: its name, its labels
// (the ones the provider gives it, see sdk.ClusterLabeler) and the values
// the platform gives the graph on it (sdk's ClusterValues objects).
//
// values is a map(string, dyn), not a type the compile checks field by
// field: the platform writes the values after the graph was compiled, on
// the hub, and a graph must compile the same whatever values exist. So a
// key is read as cluster.values.replicas (an error when absent, like a
// missing map key) or, where it may be absent, with
// cluster.values.?replicas.orValue(1) or has(cluster.values.replicas).
// A misspelt field of the variable itself (cluster.valeus) is still a
// compile error.
var clusterDecl = apiservercel.NewObjectType(clusterTypeName, map[string]*apiservercel.DeclField{
	"name":   apiservercel.NewDeclField("name", apiservercel.StringType, true, nil, nil),
	"labels": apiservercel.NewDeclField("labels", apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, -1), true, nil, nil),
	"values": apiservercel.NewDeclField("values", apiservercel.NewMapType(apiservercel.StringType, apiservercel.DynType, -1), true, nil, nil),
})

// Cluster is what the cluster variable holds for one cluster.
type Cluster struct {
	// Name is the name the cluster is engaged under.
	Name string
	// Labels are the cluster's labels; nil reads as none.
	Labels map[string]string
	// Values are the values the platform gives the graph on the cluster,
	// as JSON decodes them (map[string]any, []any, string, int64, float64,
	// bool, nil: k8s.io/apimachinery/pkg/util/json's numbers); nil reads as
	// none. Evaluation only reads them: a runtime may share one map among
	// many instances.
	Values map[string]any
}

// Value returns the cluster variable's value for c: what a runtime puts
// in Values under VarCluster.
func (c Cluster) Value() map[string]any {
	l := make(map[string]any, len(c.Labels))
	for k, v := range c.Labels {
		l[k] = v
	}
	values := c.Values
	if values == nil {
		values = map[string]any{}
	}
	return map[string]any{"name": c.Name, "labels": l, "values": values}
}

// ClusterValue is the value of the cluster variable for the cluster named
// name with labels and no values: what a runtime puts in Values under
// VarCluster. A nil labels map reads as empty. Values without VarCluster
// read as the cluster named "" with no labels and no values (single-cluster
// mode's, unless the platform gives values). See Cluster.Value for values.
func ClusterValue(name string, labels map[string]string) map[string]any {
	return Cluster{Name: name, Labels: labels}.Value()
}

// noCluster is the cluster variable's value when Values has none.
var noCluster = ClusterValue("", nil)

// ClusterUse says how a graph reads the cluster variable.
type ClusterUse uint8

const (
	// ClusterName is set when an expression may read the cluster's name.
	ClusterName ClusterUse = 1 << iota
	// ClusterLabels is set when an expression may read the cluster's
	// labels: a runtime reconciles such a graph's instances again when
	// their cluster's labels change.
	ClusterLabels
	// ClusterValues is set when an expression may read the values the
	// platform gives the graph on the cluster (cluster.values): a runtime
	// reconciles such a graph's instances again when those values change.
	ClusterValues
)

// UsesCluster reports how the graph's expressions read the cluster
// variable: zero when they do not, and then a runtime need not bind it.
func (g *Graph) UsesCluster() ClusterUse { return g.clusterUse }

// clusterDeclared reports whether resources leave the name cluster to the
// variable: no resource id and no forEach iterator takes it.
func clusterDeclared(resources []*resource) bool {
	for _, r := range resources {
		if r.node.ID == VarCluster {
			return false
		}
		for _, it := range r.iterators {
			if it.name == VarCluster {
				return false
			}
		}
	}
	return true
}

// clusterFields is the use of each field of the cluster variable.
var clusterFields = map[string]ClusterUse{"name": ClusterName, "labels": ClusterLabels, "values": ClusterValues}

// clusterUses returns how a checked expression reads the cluster
// variable. Only free uses count: a comprehension variable or a cel.bind
// named cluster hides it. Selecting a field (cluster.labels, or testing it
// with has()) reads that field; any other use of the variable (passing
// the whole object on) may read the labels and the values.
func clusterUses(ast *cel.Ast) ClusterUse {
	var use ClusterUse
	var walk func(e celast.Expr, hidden bool)
	walk = func(e celast.Expr, hidden bool) {
		switch e.Kind() {
		case celast.IdentKind:
			if !hidden && e.AsIdent() == VarCluster {
				use |= ClusterLabels | ClusterValues // the whole object
			}
		case celast.SelectKind:
			s := e.AsSelect()
			if op := s.Operand(); !hidden && op.Kind() == celast.IdentKind && op.AsIdent() == VarCluster {
				if f, ok := clusterFields[s.FieldName()]; ok {
					use |= f
					return
				}
			}
			walk(s.Operand(), hidden)
		case celast.CallKind:
			c := e.AsCall()
			if c.IsMemberFunction() {
				walk(c.Target(), hidden)
			}
			for _, a := range c.Args() {
				walk(a, hidden)
			}
		case celast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el, hidden)
			}
		case celast.MapKind:
			for _, en := range e.AsMap().Entries() {
				m := en.AsMapEntry()
				walk(m.Key(), hidden)
				walk(m.Value(), hidden)
			}
		case celast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value(), hidden)
			}
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			walk(c.IterRange(), hidden)
			walk(c.AccuInit(), hidden)
			inner := hidden || c.IterVar() == VarCluster || c.AccuVar() == VarCluster ||
				(c.HasIterVar2() && c.IterVar2() == VarCluster)
			walk(c.LoopCondition(), inner)
			walk(c.LoopStep(), inner)
			walk(c.Result(), inner)
		}
	}
	walk(ast.NativeRep().Expr(), false)
	return use
}
