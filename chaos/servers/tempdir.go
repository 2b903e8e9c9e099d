//go:build unix

package servers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Temporary directories are named dirPrefix+kind+"-*" in os.TempDir() and
// carry two marker files: ownerFile names the process that created the
// directory, serverFile the server process that runs in it. Both hold
// "PID STARTTIME\n"; the start time tells a reused PID apart.
// sweepWait bounds SweepStale's wait for the processes of one directory.
const sweepWait = 5 * time.Second

const (
	dirPrefix  = "idembench-"
	ownerFile  = ".idembench-owner"
	serverFile = ".idembench-server"
)

// makeTempDir creates a private temporary directory for a server of kind and
// marks this process as its owner.
func makeTempDir(kind string) (string, error) {
	dir, err := os.MkdirTemp("", dirPrefix+kind+"-*")
	if err != nil {
		return "", fmt.Errorf("servers: create temp dir: %w", err)
	}
	if err := writeMarker(filepath.Join(dir, ownerFile), os.Getpid()); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func writeMarker(path string, pid int) error {
	s := fmt.Sprintf("%d %d\n", pid, processStartTime(pid))
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		return fmt.Errorf("servers: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// readMarker returns the PID and start time in path; ok is false when the
// file is missing or malformed.
func readMarker(path string) (pid int, start uint64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil || pid <= 0 {
		return 0, 0, false
	}
	return pid, start, true
}

// markerAlive reports whether the process named in a marker still runs.
func markerAlive(pid int, start uint64) bool {
	now := processStartTime(pid)
	return now != 0 && now == start
}

// SweepStale removes what servers of earlier processes left behind: every
// directory this package created in os.TempDir() whose creating process is
// gone (it was killed with SIGKILL, so neither Stop nor StopAll ran), and
// the System V shared memory segment of a PostgreSQL server killed in it. A
// server still running in such a directory (possible outside Linux, where
// there is no parent-death signal) is killed with its process group first;
// processes still working in the directory get 5 seconds to exit, then
// SIGKILL.
// Directories of live processes, directories the caller passed in Options,
// and anything without this package's marker file are never touched.
//
// StartRedis and StartPostgres call SweepStale before they start, ignoring
// its error; a CLI may call it at start-up too. It returns the errors of
// directories it could not remove, joined.
func SweepStale() error { return sweepStale(os.TempDir()) }

func sweepStale(base string) error {
	ents, err := os.ReadDir(base)
	if err != nil {
		return fmt.Errorf("servers: sweep %s: %w", base, err)
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), dirPrefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		pid, start, ok := readMarker(filepath.Join(dir, ownerFile))
		if !ok || markerAlive(pid, start) {
			continue // not ours, being created, or its owner still runs
		}
		spid, sstart, ok := readMarker(filepath.Join(dir, serverFile))
		if ok && markerAlive(spid, sstart) {
			_ = killGroup(spid, syscall.SIGKILL)
		}
		if !ok {
			spid = 0
		}
		// Wait (bounded) for every process working in dir, e.g. PostgreSQL
		// backends that exit once they notice their postmaster died and
		// only then detach from its shared memory.
		_ = waitLeftovers(spid, dir, sweepWait)
		removeOrphanShm(filepath.Join(dir, "data", "postmaster.pid"))
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("servers: sweep: %w", err))
		}
	}
	return errors.Join(errs...)
}
