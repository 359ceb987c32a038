package engaged

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// claims records which object (a Secret, a ClusterProfile, a Cluster)
// holds each cluster name, so that two objects naming the same cluster,
// reconciled at once, never both engage it. The first object to claim a
// name holds it until it is deleted or renames its cluster.
type claims struct {
	lock   sync.Mutex
	byName map[multicluster.ClusterName]types.NamespacedName
}

// claim gives name to obj unless another object holds it (then it returns
// that holder and false). Names obj held before and no longer uses are
// released and returned.
func (c *claims) claim(obj types.NamespacedName, name multicluster.ClusterName) (
	holder types.NamespacedName, released []multicluster.ClusterName, ok bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	for n, o := range c.byName {
		if o == obj && n != name {
			delete(c.byName, n)
			released = append(released, n)
		}
	}
	if holder, taken := c.byName[name]; taken && holder != obj {
		return holder, released, false
	}
	c.byName[name] = obj
	return obj, released, true
}

// release frees every name obj holds and returns them.
func (c *claims) release(obj types.NamespacedName) []multicluster.ClusterName {
	c.lock.Lock()
	defer c.lock.Unlock()
	var released []multicluster.ClusterName
	for n, o := range c.byName {
		if o == obj {
			delete(c.byName, n)
			released = append(released, n)
		}
	}
	return released
}

// held reports whether some object holds name.
func (c *claims) held(name multicluster.ClusterName) bool {
	c.lock.Lock()
	defer c.lock.Unlock()
	_, ok := c.byName[name]
	return ok
}

// nameOf returns the cluster name obj holds, and false when it holds none.
func (c *claims) nameOf(obj types.NamespacedName) (multicluster.ClusterName, bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	for n, o := range c.byName {
		if o == obj {
			return n, true
		}
	}
	return "", false
}
