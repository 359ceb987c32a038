package instance

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Cluster is one cluster as the engine reaches it: the controller-runtime
// cluster (client, caches, API reader, REST mapper, event recorder) under
// the name its driver knows it by. A driver makes one Cluster per
// engagement of a cluster and hands the same one to every engine there:
// they share one event handler per metadata informer of its cache.
//
// An engine remembers what it wrote in a cluster per Cluster: handed a
// new one under a name it knew (the cluster was engaged anew), it forgets
// the old one's memory, watches and owned children, and starts afresh.
type Cluster struct {
	name string
	cluster.Cluster
	fan *fanouts

	events     sync.Once
	eventsSink events.EventRecorder
}

// NewCluster returns the Cluster of cl, engaged under name ("" for the
// manager's own cluster, the hub's in hub graphs).
func NewCluster(name string, cl cluster.Cluster) *Cluster {
	return &Cluster{name: name, Cluster: cl, fan: newFanouts()}
}

// Name is the name the cluster is engaged under.
func (c *Cluster) Name() string { return c.name }

// recorder writes Kubernetes Events on objects in the cluster.
func (c *Cluster) recorder() events.EventRecorder {
	c.events.Do(func() { c.eventsSink = c.GetEventRecorder("fleetgraph") })
	return c.eventsSink
}

// Listen adds h to the cluster's shared handler for the metadata kind of
// meta, starting the informer in the cluster's cache if needed, and
// returns once h has seen every object the informer holds; leave takes h
// off again.
func (c *Cluster) Listen(ctx context.Context, meta *metav1.PartialObjectMetadata, h toolscache.ResourceEventHandler) (leave func(), err error) {
	return c.fan.listen(ctx, c.Cluster, meta, h)
}

// hubDisplay is how messages name the cluster engaged as "" when it is not
// the instance's own: the hub's, in hub graphs.
const hubDisplay = "the hub cluster"

// displayName is how messages name the cluster called name.
func displayName(name string) string {
	if name == "" {
		return hubDisplay
	}
	return name
}
