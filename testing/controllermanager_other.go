//go:build !linux

package testing

import "syscall"

// childProcAttr has nothing to add where Pdeathsig does not exist.
func childProcAttr() *syscall.SysProcAttr { return nil }
