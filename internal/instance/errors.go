package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func panicError(id string, r any) error {
	return fmt.Errorf("panic while evaluating %s: %v", id, r)
}

// unreachable reports whether err says that a cluster did not answer
// (rather than refused the request).
func unreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err)
}

// unreachableError says that the cluster called name did not answer.
func unreachableError(name string, err error) error {
	return fmt.Errorf("cluster %q is unreachable: %w", name, err)
}

// downClusters are the clusters one reconcile found unreachable: their
// other children wait without calling them again, and only what depends
// on them waits too. Its methods are safe for concurrent use (the items of
// a node are applied at once).
type downClusters struct {
	mu sync.Mutex
	m  map[string]error
}

// set records that the cluster called name did not answer; the first
// error stays.
func (d *downClusters) set(name string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]error{}
	}
	if d.m[name] == nil {
		d.m[name] = err
	}
}

// err is why the cluster called name was found unreachable, nil if it
// was not.
func (d *downClusters) err(name string) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[name]
}

// any reports whether a cluster was found unreachable.
func (d *downClusters) any() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m) > 0
}
