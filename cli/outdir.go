package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/idembench/idembench/matrix"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/sweep"
)

// outDir is the run directory of --out: a run writes into tmp, beside
// final, and commit moves it into place, so that a new run never leaves a
// previous run's files (violations/*.html) next to its own summary.
type outDir struct {
	final, tmp string
}

// newOutDir checks final for a run: it may be missing, empty, or a
// previous idembench output (a run, comparison, matrix or sweep: it holds
// one of outputFiles), which the command replaces. Anything else is a usage error and nothing is written.
// The directory beside final that the run writes into must be creatable
// (its parents are created). An empty final means no run directory
// (--no-save).
func newOutDir(final string) (*outDir, error) {
	if final == "" {
		return &outDir{}, nil
	}
	fi, err := os.Stat(final)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, usage("--out %s: %v", final, err)
	case !fi.IsDir():
		return nil, usage("--out %s: not a directory", final)
	default:
		ents, err := os.ReadDir(final)
		if err != nil {
			return nil, usage("--out %s: %v", final, err)
		}
		if len(ents) > 0 && !isRunDir(final) {
			return nil, usage("--out %s: the directory is not empty and is not an idembench run directory (no %s); choose another or empty it",
				final, strings.Join(outputFiles, ", "))
		}
	}
	clean := filepath.Clean(final)
	stem := "." + filepath.Base(clean) + tmpInfix
	removeStaleTmp(filepath.Dir(clean), stem)
	tmp := filepath.Join(filepath.Dir(clean), stem+strconv.Itoa(os.Getpid()))
	if err := os.RemoveAll(tmp); err != nil {
		return nil, usage("--out %s: %v", final, err)
	}
	// Can it be written? Asked now, before the command runs for minutes.
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, usage("--out %s: cannot write beside it: %v", final, err)
	}
	_ = os.Remove(tmp)
	return &outDir{final: final, tmp: tmp}, nil
}

// tmpInfix joins a run directory's name and the PID of the process
// writing it in the name of its temporary directory: .NAME.idembench-tmp-PID.
const tmpInfix = ".idembench-tmp-"

// removeStaleTmp removes the temporary run directories in parent named
// stem+PID (and stem+PID+".old") whose process no longer exists: what an
// idembench killed with SIGKILL left beside the run directory.
func removeStaleTmp(parent, stem string) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), stem)
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSuffix(rest, ".old"))
		if err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(parent, e.Name()))
	}
}

// processExists reports whether a process with pid exists.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// isRunDir reports whether dir holds what an idembench command writes: a
// run, a comparison, a matrix or a sweep.
func isRunDir(dir string) bool {
	for _, f := range outputFiles {
		if exists(filepath.Join(dir, f)) {
			return true
		}
	}
	return false
}

// outputFiles are the files that mark an idembench output directory.
var outputFiles = []string{reports.HistoryFile, reports.SummaryFile, reports.CompareMarkdownFile, matrix.JSONFile, sweep.JSONFile}

// runPath is the directory the run writes into; empty under --no-save.
func (d *outDir) runPath() string { return d.tmp }

// commit moves what the run wrote into place, replacing a previous run:
// the old directory is renamed aside, the new one renamed in, and the old
// one removed. It does nothing when the run wrote nothing.
func (d *outDir) commit() error {
	if d.tmp == "" || !exists(d.tmp) {
		return nil
	}
	old := d.tmp + ".old"
	hadOld := exists(d.final)
	if hadOld {
		if err := os.Rename(d.final, old); err != nil {
			return fmt.Errorf("--out %s: replace the previous run: %w", d.final, err)
		}
	}
	if err := os.Rename(d.tmp, d.final); err != nil {
		if hadOld {
			_ = os.Rename(old, d.final)
		}
		return fmt.Errorf("--out %s: %w (this run is in %s)", d.final, err, d.tmp)
	}
	if hadOld {
		return os.RemoveAll(old)
	}
	return nil
}

// moved returns p as it is once commit has run: a path inside the
// temporary directory is rebased onto the final one, any other is
// returned as it is.
func (d *outDir) moved(p string) string {
	if d.tmp == "" || p == "" {
		return p
	}
	rel, err := filepath.Rel(d.tmp, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.Join(d.final, rel)
}

// discard removes what a run that failed wrote.
func (d *outDir) discard() {
	if d.tmp != "" {
		_ = os.RemoveAll(d.tmp)
	}
}
