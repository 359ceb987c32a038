package engaged

import (
	"fmt"
	"maps"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/access"
)

// DuplicateRetry is how often an object whose cluster name or server is
// held by another object is looked at again.
const DuplicateRetry = 30 * time.Second

// Claim gives the cluster name to obj, disengaging any name obj held
// before (it was renamed). When another object holds the name, it reports
// that on obj and returns false: the caller looks again after
// DuplicateRetry.
func (c *Clusters) Claim(obj client.Object, name multicluster.ClusterName) bool {
	key := client.ObjectKeyFromObject(obj)
	holder, released, ok := c.claims.claim(key, name)
	for _, n := range released {
		c.Disengage(n)
	}
	if !ok {
		c.Report(obj, name, access.ReasonDuplicateName,
			fmt.Errorf("cluster name %q is already used by %s", name, holder))
	}
	return ok
}

// Forget disengages the cluster of an object that is gone (or no longer
// selected) and frees its name.
func (c *Clusters) Forget(key types.NamespacedName) {
	for _, name := range c.claims.release(key) {
		c.Disengage(name)
		c.servers.release(name)
		c.failures.clear(name)
	}
}

// Refresh updates the labels of the cluster called name and reports true
// when it is engaged from a description of that hash: nothing else needs
// doing. When the labels changed, NotifyLabelsChanged's funcs are told.
func (c *Clusters) Refresh(name multicluster.ClusterName, hash string, labels map[string]string) bool {
	c.lock.Lock()
	e, ok := c.byName[name]
	if !ok || e.hash != hash {
		c.lock.Unlock()
		return false
	}
	changed := !maps.Equal(e.labels, labels)
	e.labels = labels
	notify := c.relabelled
	c.lock.Unlock()
	if changed {
		for _, f := range notify {
			f(name)
		}
	}
	return true
}

// Refuse disengages the cluster called name, whose description obj cannot
// be used (err from access: unsafe, invalid or missing), and reports why
// on obj. It waits for obj to change.
func (c *Clusters) Refuse(obj client.Object, name multicluster.ClusterName, err error) {
	c.Fail(obj, name, access.ReasonFor(err), err)
}

// Fail reports reason and err on obj and disengages the cluster called
// name. The failure is recorded first, so whoever sees the cluster's
// context end can already read why in EngagementFailures.
func (c *Clusters) Fail(obj client.Object, name multicluster.ClusterName, reason string, err error) {
	c.Report(obj, name, reason, err)
	c.Disengage(name)
	c.servers.release(name)
}

// Report logs err and records it as a Warning Event on obj and as why the
// cluster is not engaged (EngagementFailures). What is reported is at most
// access.MaxReportedMessage long, whatever err says; errors built by the
// providers never carry credentials.
func (c *Clusters) Report(obj client.Object, name multicluster.ClusterName, reason string, err error) {
	msg := access.Truncate(err.Error(), access.MaxReportedMessage)
	c.logFor(obj, name).Info("Cluster not engaged", "reason", reason, "error", msg)
	c.failures.set(name, reason+": "+msg)
	c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Engage", "%s", msg)
}

// Warn logs err and records it as a Warning Event on obj, about a cluster
// that stays as it is (engaged or not): EngagementFailures is unchanged.
func (c *Clusters) Warn(obj client.Object, name multicluster.ClusterName, reason string, err error) {
	msg := access.Truncate(err.Error(), access.MaxReportedMessage)
	c.logFor(obj, name).Info("Warning about a cluster", "reason", reason, "error", msg)
	c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Engage", "%s", msg)
}

// engaged reports the engagement on obj and clears any failure.
func (c *Clusters) engaged(obj client.Object, name multicluster.ClusterName) {
	c.logFor(obj, name).Info("Engaged cluster")
	c.failures.clear(name)
	c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, access.ReasonEngaged, "Engage", "cluster %q engaged", name)
}

func (c *Clusters) logFor(obj client.Object, name multicluster.ClusterName) logr.Logger {
	return c.log.WithValues("object", client.ObjectKeyFromObject(obj).String(), "cluster", name)
}
