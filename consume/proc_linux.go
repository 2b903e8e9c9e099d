package consume

import "syscall"

// serverProcAttr puts a private server in its own process group and kills
// it if this process dies first.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// workerProcAttr kills a worker process if this process dies first.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
