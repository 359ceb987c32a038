//go:build !unix

package input

// openFlags: none beyond read-only where there is no O_NONBLOCK.
const openFlags = 0
