package multiproc

import "syscall"

// workerProcAttr puts a worker in its own process group (a Ctrl-C reaches
// the coordinator only, which kills its workers) and has the kernel kill it
// if the coordinator dies, even by SIGKILL.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
