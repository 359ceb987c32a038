package sdk

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/internal/rollout"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// ErrInvalidHealthCondition is returned (wrapped, with the compiler's
// error naming the expression) by SetHealthCondition for a condition that
// does not type-check against the graph's instance kind; match it with
// errors.Is.
var ErrInvalidHealthCondition = rollout.ErrInvalidHealthCondition

// SetHealthCondition sets spec.health.instanceCondition of the
// GraphRollout named rolloutName (or of the one that rules the graph so
// named): a CEL expression over each instance, as `instance`, that must
// hold for the instance to count as Ready, for example
// `instance.status.availableReplicas >= instance.spec.replicas`. It is
// type-checked first against the graph's latest revision: one that does
// not compile is not written, and the error wraps
// ErrInvalidHealthCondition and a *graph.Error naming the expression. ""
// removes the condition. It returns ErrNoRollout when there is no such
// GraphRollout. (A condition written with kubectl is checked by the hub
// within Options.Rollouts.Resync instead: see the GraphRollout's
// HealthConditionValid condition.)
func (h *Hub) SetHealthCondition(ctx context.Context, rolloutName, condition string) error {
	return h.rollouts.setHealthCondition(ctx, rolloutName, condition)
}

func (r *rollouts) setHealthCondition(ctx context.Context, rolloutName, condition string) error {
	if r.controller == nil {
		return fmt.Errorf("%w: rollouts are disabled", ErrNoRollout)
	}
	return r.controller.SetHealthCondition(ctx, rolloutName, condition)
}

// healthListTimeout bounds reading a cluster's instances from its cache
// for a health condition (a cache that has to start an informer waits for
// its first list).
const healthListTimeout = 10 * time.Second

// maxCompiledConditions bounds the health conditions kept compiled.
const maxCompiledConditions = 64

// healthGates compiles and asks GraphRollouts' health conditions for a
// Hub: each condition once per revision's graph, each evaluation bounded
// by the graph's limits, the instances of one cluster sharing one budget
// per look.
type healthGates struct {
	h *Hub

	mu       sync.Mutex
	compiled map[conditionKey]compiledCondition
}

type conditionKey struct {
	g   *graph.Graph
	src string
}

type compiledCondition struct {
	c   *graph.InstanceCondition
	err error
}

// compile compiles src against g once.
func (hg *healthGates) compile(g *graph.Graph, src string) (*graph.InstanceCondition, error) {
	key := conditionKey{g, src}
	hg.mu.Lock()
	defer hg.mu.Unlock()
	if cc, ok := hg.compiled[key]; ok {
		return cc.c, cc.err
	}
	if hg.compiled == nil || len(hg.compiled) >= maxCompiledConditions {
		hg.compiled = map[conditionKey]compiledCondition{}
	}
	c, err := g.CompileInstanceCondition(src)
	hg.compiled[key] = compiledCondition{c, err}
	return c, err
}

// check type-checks src against the named graph's latest registered
// revision (nil when the graph is not registered: there is nothing to
// check against yet).
func (hg *healthGates) check(graphName, src string) error {
	reg := hg.h.lookup(graphName)
	if reg == nil || reg.graph == nil {
		return nil
	}
	_, err := hg.compile(reg.graph, src)
	return err
}

// judge counts the named graph's instances on the cluster that the
// revision serving it confirmed ACTIVE and for which src holds, and says
// why the first other one does not. The instances come from the cluster's
// cache (the informer the runtime watches them with); the evaluations of
// one look share one Budget of the graph's per-instance limits, so a
// cluster's look is bounded whatever its instances hold.
func (hg *healthGates) judge(ctx context.Context, graphName, cluster, src string) (int, string, error) {
	h := hg.h
	if n, why, isPull, err := h.pull.judge(graphName, cluster, src); isPull { // pull.go: the agent answers
		return n, why, err
	}
	v, ok := h.runtime.Served(graphName)[multicluster.ClusterName(cluster)]
	e := h.cluster(cluster)
	if !ok || v.Graph == nil || e == nil {
		return 0, "", fmt.Errorf("graph %s is not served on cluster %q", graphName, cluster)
	}
	cond, err := hg.compile(v.Graph, src)
	if err != nil {
		return 0, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, healthListTimeout)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(v.Graph.Instance.GVK.GroupVersion().WithKind(v.Graph.Instance.GVK.Kind + "List"))
	if err := e.cl.GetCache().List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, "", fmt.Errorf("listing %s on cluster %q: %w", v.Graph.Instance.GVK.Kind, cluster, err)
	}
	states := h.runtime.InstanceStates(graphName, multicluster.ClusterName(cluster))
	ctx = graph.WithBudget(ctx, graph.NewBudget(v.Graph.Limits()))
	passing, why := 0, ""
	for i := range list.Items {
		u := &list.Items[i]
		key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
		if states[key] != contract.StateActive {
			continue // not Ready on this revision: the Ready share counts it
		}
		holds, err := cond.Eval(ctx, u.Object)
		switch {
		case err == nil && holds:
			passing++
		case why != "":
		case err != nil:
			why = fmt.Sprintf("instance %s: %v", key, err)
		default:
			why = fmt.Sprintf("instance %s: the condition is false", key)
		}
	}
	return passing, why, nil
}
