package dynamotest

import "syscall"

// sysProcAttr makes dynalite die with the test process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
