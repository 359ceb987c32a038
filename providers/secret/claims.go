package secret

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// claims records which Secret holds each cluster name, so that two Secrets
// naming the same cluster, reconciled at once, never both engage it. The
// first Secret to claim a name holds it until it is deleted or renames its
// cluster.
type claims struct {
	lock   sync.Mutex
	byName map[multicluster.ClusterName]types.NamespacedName
}

// claim gives name to secret unless another Secret holds it (then it
// returns that owner and false). Names secret held before and no longer
// uses are released and returned.
func (c *claims) claim(secret types.NamespacedName, name multicluster.ClusterName) (
	owner types.NamespacedName, released []multicluster.ClusterName, ok bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	for n, s := range c.byName {
		if s == secret && n != name {
			delete(c.byName, n)
			released = append(released, n)
		}
	}
	if owner, taken := c.byName[name]; taken && owner != secret {
		return owner, released, false
	}
	c.byName[name] = secret
	return secret, released, true
}

// release frees every name secret holds and returns them.
func (c *claims) release(secret types.NamespacedName) []multicluster.ClusterName {
	c.lock.Lock()
	defer c.lock.Unlock()
	var released []multicluster.ClusterName
	for n, s := range c.byName {
		if s == secret {
			delete(c.byName, n)
			released = append(released, n)
		}
	}
	return released
}

// held reports whether some Secret holds name.
func (c *claims) held(name multicluster.ClusterName) bool {
	c.lock.Lock()
	defer c.lock.Unlock()
	_, ok := c.byName[name]
	return ok
}

// nameOf returns the cluster name secret holds, and false when it holds
// none (it is not a kubeconfig Secret this provider reads, or its name is
// held by another Secret).
func (c *claims) nameOf(secret types.NamespacedName) (multicluster.ClusterName, bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	for n, s := range c.byName {
		if s == secret {
			return n, true
		}
	}
	return "", false
}
