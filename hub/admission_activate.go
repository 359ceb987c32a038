package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// This file binds the admission policy only once the API server can run it
// without refusing creates. For a group/version it has just started to
// serve, the API server answers every create that a MutatingAdmissionPolicy
// matches with 503 until it has read the kind's schema (it polls its
// OpenAPI every 5 s), whatever the policy's failure policy. So the policy
// is bound only after a dry-run create of a probe object, matched by a
// probe policy of its own (Admission.ProbePolicy), shows the schema found.
// Until then, and wherever the policy is off, the instance runtime stamps
// new instances itself, one write more each.

const (
	// admissionProbePoll is how often the probe is sent.
	admissionProbePoll = 200 * time.Millisecond
	// admissionProbeTimeout bounds the wait for the API server to be ready;
	// after it the policy is left unbound until the next Ensure.
	admissionProbeTimeout = 2 * time.Minute
)

// activateLater starts, once the Ensure holding ticket has made g's CRD
// established on c, the binding of g's admission policy there, in a
// goroutine of its own that lives as long as the cluster's engagement
// (or ctx, when c has none), unless a removal fenced it off.
func (a *admissions) activateLater(ctx context.Context, c Cluster, g Graph, ticket uint64) {
	lifetime := c.Engagement
	if lifetime == nil {
		lifetime = ctx
	}
	a.fence.start(lifetime, fenceKey{cluster: c.Name, graph: g.Name}, ticket, func(ctx context.Context) {
		a.activate(ctx, c.Name, c.Cluster, g)
	})
}

// activate binds g's admission policy on cl once it is safe, if cl serves
// MutatingAdmissionPolicy and the policy and its binding are not both
// there yet (either may have been deleted by hand: repair.go).
func (a *admissions) activate(ctx context.Context, clusterName string, cl cluster.Cluster, g Graph) {
	log := a.opts.Logger.WithValues("cluster", clusterName, "graph", g.Name)
	served, err := a.servesPolicies(ctx, cl)
	if err != nil || !served {
		log.V(1).Info("admission policy not installed; the runtime stamps new instances itself", "served", served, "error", err)
		return
	}
	if bound, err := a.installed(ctx, cl, g); err != nil || bound {
		if bound && a.refresh {
			a.install(ctx, clusterName, cl, g)
		}
		return
	}
	probe := g.Admission
	if err := a.apply(ctx, cl, probe.ProbePolicy, probe.ProbeBinding); err != nil {
		log.Info("admission probe not installed; the runtime stamps new instances itself", "reason", err.Error())
		return
	}
	defer func() { _ = a.delete(context.WithoutCancel(ctx), cl, probe.ProbePolicy, probe.ProbeBinding) }()
	if err := a.waitReady(ctx, cl, g); err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return // superseded, removed or disengaged (admission_fence.go)
		}
		log.Info("admission policy not bound; the runtime stamps new instances itself", "reason", err.Error())
		return
	}
	a.install(ctx, clusterName, cl, g)
}

// waitReady sends the dry-run probe until the probe policy's own error
// comes back: the API server found the kind's schema.
func (a *admissions) waitReady(ctx context.Context, cl cluster.Cluster, g Graph) error {
	last := "no answer yet"
	name := g.Admission.ProbePolicy.GetName()
	err := wait.PollUntilContextTimeout(ctx, admissionProbePoll, admissionProbeTimeout, true, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, a.opts.RequestTimeout)
		defer cancel()
		obj := g.Admission.ProbeObject.DeepCopyObject().(client.Object)
		err := cl.GetClient().Create(ctx, obj, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), name) {
			return true, nil
		}
		last = fmt.Sprintf("probe answered %v", err)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", last, err)
	}
	return nil
}
