package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// stateActive is kro's status.state of a ready instance.
const stateActive = "ACTIVE"

// healthListTimeout bounds reading the instances for a health condition.
const healthListTimeout = 10 * time.Second

// conditions caches compiled health conditions, per graph and source.
type conditions struct {
	mu sync.Mutex
	m  map[conditionKey]compiledCondition
}

type conditionKey struct {
	g   *graph.Graph
	src string
}

type compiledCondition struct {
	c   *graph.InstanceCondition
	err error
}

// maxConditions bounds the compiled conditions kept.
const maxConditions = 64

func (c *conditions) compile(g *graph.Graph, src string) (*graph.InstanceCondition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := conditionKey{g, src}
	if cc, ok := c.m[k]; ok {
		return cc.c, cc.err
	}
	if c.m == nil || len(c.m) >= maxConditions {
		c.m = map[conditionKey]compiledCondition{}
	}
	cond, err := g.CompileInstanceCondition(src)
	c.m[k] = compiledCondition{cond, err}
	return cond, err
}

// health asks the assignment's health condition of the graph's instances,
// as the hub asks it of a pushed cluster's: it counts those the serving
// revision confirmed ACTIVE and for which it holds, and says why the
// first other one does not. The evaluations of one look share one budget
// of the graph's limits.
func (a *Agent) health(ctx context.Context, s servedView) *fgv1alpha1.ReportedHealth {
	src := s.spec.HealthCondition
	if src == "" || s.spec.Removal != "" {
		return nil
	}
	out := &fgv1alpha1.ReportedHealth{Condition: src}
	v, ok := a.rt.Served(s.name)[mcmanager.LocalCluster]
	if !ok || v.Graph == nil {
		out.Why = "no revision of the graph serves the cluster"
		return out
	}
	cond, err := a.conds.compile(v.Graph, src)
	if err != nil {
		out.Why = bounded(err.Error())
		return out
	}
	lctx, cancel := context.WithTimeout(ctx, healthListTimeout)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(v.Graph.Instance.GVK.GroupVersion().WithKind(v.Graph.Instance.GVK.Kind + "List"))
	if err := a.local.GetCache().List(lctx, list, client.UnsafeDisableDeepCopy); err != nil {
		out.Why = bounded(fmt.Sprintf("listing %s: %v", v.Graph.Instance.GVK.Kind, err))
		return out
	}
	states := a.rt.InstanceStates(s.name, mcmanager.LocalCluster)
	lctx = graph.WithBudget(lctx, graph.NewBudget(v.Graph.Limits()))
	for i := range list.Items {
		u := &list.Items[i]
		key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
		if states[key] != stateActive {
			continue
		}
		holds, err := cond.Eval(lctx, u.Object)
		switch {
		case err == nil && holds:
			out.Passing++
		case out.Why != "":
		case err != nil:
			out.Why = bounded(fmt.Sprintf("instance %s: %v", key, err))
		default:
			out.Why = bounded(fmt.Sprintf("instance %s: the condition is false", key))
		}
	}
	return out
}
