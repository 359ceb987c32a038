package sdk

import (
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fleetgraph/fleetgraph/spoke"
)

// The manager's controller options (manager.Options.Controller, read back
// with GetControllerOptions) apply to the Hub's controllers as follows:
//   - the RGD controller is built with controller-runtime's builder, so
//     every field applies to it as to the manager's other controllers
//     (MaxConcurrentReconciles, CacheSyncTimeout, RecoverPanic,
//     NeedLeaderElection, UsePriorityQueue, ReconciliationTimeout, ...),
//     except that SkipNameValidation defaults to true (several Hubs may
//     live in one process) unless the manager sets it, and
//     MaxConcurrentReconciles to rgd.DefaultWorkers (4) rather than 1,
//     so that a tenant's slow RGDs do not hold up the others;
//   - the spoke runtime's workers: MaxConcurrentReconciles is the default
//     of Options.Instances.Workers (graphs served before SetupWithManager keep the
//     count they started with until they are next updated). A panic in one
//     instance's reconcile is always recovered and reported on the
//     instance, whatever RecoverPanic says: one instance must not stop a
//     fleet. The other fields have no counterpart there.

// applyControllerOptions takes the spoke workers' default from the
// manager's controller options, unless Options.Instances.Workers was given
// (workersSet).
func applyControllerOptions(rt *spoke.Runtime, workersSet bool, local manager.Manager) {
	if workersSet {
		return
	}
	rt.SetWorkers(local.GetControllerOptions().MaxConcurrentReconciles)
}
