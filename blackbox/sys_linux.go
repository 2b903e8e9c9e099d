package blackbox

import "syscall"

// sysProcAttr makes the service the leader of its own process group and
// has the kernel kill it if the harness dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
