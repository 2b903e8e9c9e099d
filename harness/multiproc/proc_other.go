//go:build !linux

package multiproc

import "syscall"

// workerProcAttr puts a worker in its own process group, so that a Ctrl-C
// reaches the coordinator only, which kills its workers.
func workerProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
