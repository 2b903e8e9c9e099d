//go:build linux

package servers

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in a new process group (so Stop can signal the
// server and every process it forked) and has the kernel send it SIGKILL when
// this process dies, however it dies.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}

// killGroup sends sig to every process of group pgid.
func killGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// procStat is what this package reads from /proc/PID/stat.
type procStat struct {
	state     byte   // R, S, D, Z, T, …
	pgrp      int    // process group id
	startTime uint64 // clock ticks after boot; tells a reused PID apart
}

// readProcStat parses /proc/pid/stat; ok is false when no such process exists.
func readProcStat(pid int) (st procStat, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return st, false
	}
	// "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime …"; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return st, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return st, false
	}
	st.state = f[0][0]
	st.pgrp, _ = strconv.Atoi(string(f[2]))
	st.startTime, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return st, true
}

// processAlive reports whether pid runs and is not a zombie. A zombie holds
// no port, file or memory; it only waits for a parent to reap it.
func processAlive(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && st.state != 'Z'
}

// processStopped reports whether pid is stopped by a signal (SIGSTOP,
// SIGTSTP) or a tracer: it runs but answers nothing.
func processStopped(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && (st.state == 'T' || st.state == 't')
}

// processStartTime returns pid's start time, 0 if it does not run.
func processStartTime(pid int) uint64 {
	st, ok := readProcStat(pid)
	if !ok || st.state == 'Z' {
		return 0
	}
	return st.startTime
}

// leftovers returns the live processes, zombies aside, that belong to
// process group pgid or whose working directory is dir or inside it. Every
// server process works in its directory (Redis chdirs to --dir; PostgreSQL
// to its data directory), and PostgreSQL's backends leave the postmaster's
// process group (each calls setsid), so the directory is what finds them.
// pgid 0 or dir "" skips that test. It scans /proc.
func leftovers(pgid int, dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		st, ok := readProcStat(pid)
		if !ok || st.state == 'Z' {
			continue
		}
		if pgid > 0 && st.pgrp == pgid {
			pids = append(pids, pid)
			continue
		}
		if dir == "" {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && inDir(cwd, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeOrphanShm removes the System V shared memory segment that a
// postmaster killed with SIGKILL left behind, as recorded on line 7 of its
// postmaster.pid ("KEY ID"), if the segment still has that key and no
// process is attached to it. A postmaster that shuts down removes it itself.
func removeOrphanShm(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return
	}
	key, err1 := strconv.ParseUint(f[0], 10, 64)
	id, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return
	}
	var d unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &d); err != nil || d.Nattch != 0 || uint32(d.Perm.Key) != uint32(key) {
		return
	}
	_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
}
