package testing

import "syscall"

// childProcAttr makes a child process die with the test process, so that
// a test killed on a timeout leaves no controller manager behind.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
