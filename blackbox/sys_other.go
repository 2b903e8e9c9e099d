//go:build unix && !linux

package blackbox

import "syscall"

// sysProcAttr makes the service the leader of its own process group.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
