//go:build !linux

package testing

import "errors"

// Pause freezes the cluster's API server process. It is supported on Linux
// only.
func (c *Cluster) Pause() error { return errors.New("testing: Pause needs Linux") }

// Resume undoes Pause. It is supported on Linux only.
func (c *Cluster) Resume() error { return errors.New("testing: Resume needs Linux") }
