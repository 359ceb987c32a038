package engaged

import (
	"maps"
	"sync"

	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// failures records why clusters are not engaged, for EngagementFailures.
type failures struct {
	lock   sync.Mutex
	byName map[multicluster.ClusterName]string
}

func (f *failures) set(name multicluster.ClusterName, why string) {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.byName[name] = why
}

func (f *failures) clear(name multicluster.ClusterName) {
	f.lock.Lock()
	defer f.lock.Unlock()
	delete(f.byName, name)
}

func (f *failures) list() map[multicluster.ClusterName]string {
	f.lock.Lock()
	defer f.lock.Unlock()
	return maps.Clone(f.byName)
}
