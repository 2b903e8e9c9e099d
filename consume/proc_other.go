//go:build !linux

package consume

import "syscall"

// serverProcAttr puts a private server in its own process group.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
