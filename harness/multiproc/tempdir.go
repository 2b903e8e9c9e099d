package multiproc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempDirPrefix starts the name of a run's directory of worker streams in
// os.TempDir(), followed by the coordinator's PID and a dash.
const tempDirPrefix = "idembench-workers-"

// makeTempDir creates the directory of the worker streams of a run, named
// after this process so that SweepStale can tell whose it is.
func makeTempDir() (string, error) {
	return os.MkdirTemp("", tempDirPrefix+strconv.Itoa(os.Getpid())+"-")
}

// SweepStale removes the worker-stream directories that coordinators left
// in os.TempDir() when they were killed (SIGKILL: no deferred cleanup
// ran): every one whose coordinator PID no longer exists. Directories of
// live processes and names it does not know are left alone. It returns the
// errors of the directories it could not remove, joined.
func SweepStale() error { return sweepStale(os.TempDir()) }

func sweepStale(base string) error {
	ents, err := os.ReadDir(base)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), tempDirPrefix)
		if !e.IsDir() || !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// processExists reports whether a process with pid exists (signal 0 is
// delivered or refused for lack of permission).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
