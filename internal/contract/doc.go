// Package contract is what the hub and the spoke runtime agree on about the
// objects they put on a spoke: the labels and annotations that mark a child
// as ours, the instance finalizer, the kinds an instance's children may have,
// and the MutatingAdmissionPolicy that stamps new instances.
//
// It sits below both sides so that neither imports the other: the hub binds
// the policy that the runtime's finalizer relies on, and both must spell it
// the same way. Changing anything here changes what running clusters hold,
// so names are never renamed, only added.
package contract
