package consume

import "syscall"

// serverProcAttr puts a private server in its own process group and kills
// it if this process dies first.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
