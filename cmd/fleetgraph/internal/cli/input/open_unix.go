//go:build unix

package input

import "syscall"

// openFlags keep open from blocking on a FIFO put in a file's place after
// it was checked.
const openFlags = syscall.O_NONBLOCK
