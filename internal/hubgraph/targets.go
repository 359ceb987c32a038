package hubgraph

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/fleetgraph/fleetgraph/internal/instance"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// ErrTargetRefused is wrapped by a refusal of an instance's target.
var ErrTargetRefused = errors.New("target refused")

// UntargetableError is what Clusters.Cluster returns for a cluster that
// exists in the fleet but that hub graphs may not target (a pull
// cluster, which the hub never connects to): the refusal gives Rule as
// its reason instead of "not an engaged cluster".
type UntargetableError struct{ Rule string }

func (e *UntargetableError) Error() string { return e.Rule }

// refusal names the resource, the cluster (and the kubeconfig Secret it
// was named by, for a Secret target) and the rule that refused it.
type refusal struct {
	resource, cluster, secret, rule string
}

func (e *refusal) Error() string {
	switch {
	case e.secret != "" && e.cluster != "":
		return fmt.Sprintf("resource %q: kubeconfig Secret %q (cluster %q): %s: %v", e.resource, e.secret, e.cluster, e.rule, ErrTargetRefused)
	case e.secret != "":
		return fmt.Sprintf("resource %q: kubeconfig Secret %q: %s: %v", e.resource, e.secret, e.rule, ErrTargetRefused)
	}
	return fmt.Sprintf("resource %q: cluster %q: %s: %v", e.resource, e.cluster, e.rule, ErrTargetRefused)
}

func (e *refusal) Unwrap() error { return ErrTargetRefused }

// plan is where each node of one instance writes: the cluster's name per
// node id ("" for the hub), and each cluster used.
type plan struct {
	// vals are what targets were resolved with (schema and fleet): the
	// evaluation starts from them, so a collection expands to the same
	// items.
	vals      graph.Values
	clusterOf map[string]string
	// items holds, for a collection whose target is computed, the
	// cluster of each of its Iterations.
	items    map[string][]string
	clusters map[string]*instance.Cluster
}

var _ instance.Placement = &plan{}

// Place is where item i of node n goes (instance.Placement).
func (p *plan) Place(n *graph.Node, i int) (*instance.Cluster, error) {
	name, err := p.clusterFor(n.ID, i)
	if err != nil {
		return nil, err
	}
	c := p.clusters[name]
	if c == nil {
		return nil, fmt.Errorf("resource %q: cluster %q was not resolved", n.ID, name)
	}
	return c, nil
}

// clusterFor is where item i of node id goes.
func (p *plan) clusterFor(id string, i int) (string, error) {
	items, ok := p.items[id]
	if !ok {
		return p.clusterOf[id], nil
	}
	if i >= len(items) {
		return "", fmt.Errorf("resource %q: item %d has no resolved target", id, i)
	}
	return items[i], nil
}

// targets resolves where each resource of one instance goes and checks it
// against the engaged clusters and the policy. It is not written to after
// it is made and needs no lock: each resolution's state is its plan.
type targets struct {
	rt *Runtime
	g  *graph.Graph
}

// resolve evaluates every target of inst and checks each against the
// engaged clusters and the policy, before anything is written. The first
// refusal (in topological order) is returned. Its evaluations share one
// graph.Budget of the graph's Limits: a tenant's targets together, forEach
// expansions included, are bounded before anything is written.
func (t *targets) resolve(ctx context.Context, inst *unstructured.Unstructured) (*plan, error) {
	ctx = graph.WithBudget(ctx, graph.NewBudget(t.g.Limits().WithDefaults()))
	vals := graph.Values{"schema": inst.Object}
	if t.g.UsesFleet() {
		vals[graph.VarFleet] = fleetOf(t.rt.opts.Clusters, t.visible(ctx, inst))
	}
	p := &plan{vals: vals, clusterOf: map[string]string{}, items: map[string][]string{},
		clusters: map[string]*instance.Cluster{"": t.rt.handle("", t.rt.hub())}}
	for _, n := range t.g.Nodes {
		if n.Target() == nil {
			p.clusterOf[n.ID] = ""
			continue
		}
		if n.Collection && !n.External && n.Target().Computed() {
			if err := t.resolveItems(ctx, inst, p, n); err != nil {
				return nil, err
			}
			continue
		}
		name, err := t.resolveOne(ctx, inst, p, n, nil)
		if err != nil {
			return nil, err
		}
		p.clusterOf[n.ID] = name
	}
	return p, nil
}

// resolveItems resolves the target of each item of a collection.
func (t *targets) resolveItems(ctx context.Context, inst *unstructured.Unstructured, p *plan, n *graph.Node) error {
	its, err := n.Iterations(ctx, p.vals)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(its))
	for _, it := range its {
		name, err := t.resolveOne(ctx, inst, p, n, it)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	p.items[n.ID] = names
	return nil
}

// resolveOne resolves and checks one target, and returns its cluster.
func (t *targets) resolveOne(ctx context.Context, inst *unstructured.Unstructured, p *plan, n *graph.Node, iteration map[string]any) (string, error) {
	to, err := n.ResolveTarget(ctx, p.vals, iteration)
	if err != nil {
		return "", err
	}
	name := to.Cluster
	if to.SecretName != "" {
		if name, err = t.secretCluster(n, to); err != nil {
			return "", err
		}
	}
	cl, err := t.allowed(ctx, n, inst, name, to.Computed)
	if err != nil {
		var r *refusal
		if to.SecretName != "" && errors.As(err, &r) {
			r.secret = to.SecretNamespace + "/" + to.SecretName
		}
		return "", err
	}
	p.clusters[name] = t.rt.handle(name, cl)
	return name, nil
}

// secretCluster maps a Secret target to the cluster engaged from that
// kubeconfig Secret, through the provider (Clusters.SecretCluster).
func (t *targets) secretCluster(n *graph.Node, to graph.ResolvedTarget) (string, error) {
	secret := to.SecretNamespace + "/" + to.SecretName
	name, ok := t.rt.opts.Clusters.SecretCluster(to.SecretNamespace, to.SecretName)
	switch {
	case ok:
		return name, nil
	case name != "":
		return "", &refusal{resource: n.ID, cluster: name, secret: secret, rule: "the cluster of that kubeconfig Secret is not engaged"}
	}
	return "", &refusal{resource: n.ID, secret: secret,
		rule: "no cluster comes from that Secret (not a kubeconfig Secret the provider reads, or the provider maps no Secrets)"}
}

// allowed checks one target and returns its cluster.
func (t *targets) allowed(ctx context.Context, n *graph.Node, inst *unstructured.Unstructured, name string, computed bool) (cluster.Cluster, error) {
	refuse := func(rule string) (cluster.Cluster, error) {
		return nil, &refusal{resource: n.ID, cluster: name, rule: rule}
	}
	pol := t.rt.opts.Policy
	if computed && pol.Selector == nil && pol.Allow == nil {
		return refuse("a target computed from the instance needs the platform to allow it (no allowed set is configured)")
	}
	cl, err := t.rt.opts.Clusters.Cluster(ctx, name)
	if u := (*UntargetableError)(nil); errors.As(err, &u) {
		return refuse(u.Rule)
	}
	if err != nil || cl == nil {
		return refuse("not an engaged cluster")
	}
	set := labels.Set(t.rt.opts.Clusters.Labels(name))
	if pol.Selector != nil {
		if ok, err := matches(pol.Selector, set); err != nil || !ok {
			return refuse(fmt.Sprintf("outside the platform's allowed clusters (%s)", metav1.FormatLabelSelector(pol.Selector)))
		}
	}
	if sel := t.g.AllowedClusters(); computed && sel != nil {
		if ok, err := matches(sel, set); err != nil || !ok {
			return refuse(fmt.Sprintf("outside the RGD's spec.target.allowedClusters (%s)", metav1.FormatLabelSelector(sel)))
		}
	}
	if pol.Allow != nil {
		if err := pol.Allow(ctx, t.g, inst, name); err != nil {
			return refuse("refused by the platform's hook: " + err.Error())
		}
	}
	return cl, nil
}

// visible says which clusters fleet.clusters shows to inst (nil: to the
// graph, for noticing changes): with an allowed set configured, only the
// clusters it may use, so that a platform's cluster names and labels
// outside it are not read by the graph's author. A cluster shown must
// match Policy.Selector and the RGD's spec.target.allowedClusters, and
// pass Policy.Allow for inst. Without an allowed set, literal targets may
// name any engaged cluster, and every one is shown.
func (t *targets) visible(ctx context.Context, inst *unstructured.Unstructured) func(string, map[string]string) bool {
	pol := t.rt.opts.Policy
	if pol.Selector == nil && pol.Allow == nil {
		return nil
	}
	own := t.g.AllowedClusters()
	return func(name string, l map[string]string) bool {
		set := labels.Set(l)
		for _, sel := range []*metav1.LabelSelector{pol.Selector, own} {
			if sel == nil {
				continue
			}
			if ok, err := matches(sel, set); err != nil || !ok {
				return false
			}
		}
		return inst == nil || pol.Allow == nil || pol.Allow(ctx, t.g, inst, name) == nil
	}
}

func matches(sel *metav1.LabelSelector, set labels.Set) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	return s.Matches(set), nil
}
