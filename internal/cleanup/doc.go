// Package cleanup holds the steps of taking a graph off one cluster: count
// the instances still held by the runtime's finalizer (HeldInstances),
// release them and their children in place when nothing will finalize them
// any more (ReleaseInstances), and delete the CRD where no instance is left
// (DeleteUnusedCRDs). sdk.Hub orders the steps and retries each; they are
// here so that removal is found in one place, by its name.
package cleanup
