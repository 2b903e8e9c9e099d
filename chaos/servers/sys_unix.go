//go:build unix && !linux

package servers

import "syscall"

// sysProcAttr puts the child in a new process group. Outside Linux there is
// no parent-death signal: a server outlives a parent killed with SIGKILL, and
// only Stop, StopAll or SweepStale end it.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// killGroup sends sig to every process of group pgid.
func killGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// processAlive reports whether pid exists (zombies included: there is no
// portable way to tell them apart).
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// processStopped reports false: without /proc a stopped process cannot be
// told from a running one.
func processStopped(int) bool { return false }

// processStartTime returns 1 for a live pid and 0 otherwise: without /proc a
// reused PID cannot be told apart.
func processStartTime(pid int) uint64 {
	if processAlive(pid) {
		return 1
	}
	return 0
}

// leftovers returns pgid itself while any process belongs to that group.
// Outside Linux there is no portable way to find processes by working
// directory, so PostgreSQL backends (which leave the group) are not seen;
// they exit on their own once their postmaster is gone.
func leftovers(pgid int, _ string) []int {
	if pgid > 0 && syscall.Kill(-pgid, 0) == nil {
		return []int{pgid}
	}
	return nil
}

// removeOrphanShm does nothing outside Linux: a postmaster killed with
// SIGKILL may leave its small System V segment behind (ipcs -m shows it).
func removeOrphanShm(string) {}
