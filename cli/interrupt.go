package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/idembench/idembench/matrix"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/sweep"
)

// interruptGrace is how long a command waits, after SIGINT or SIGTERM,
// for the run to end on its own before it reports what was written and
// exits 130: a check already under way does not watch ctx and may take up
// to its budget.
const interruptGrace = 1500 * time.Millisecond

// errInterrupted reports a command cut short by SIGINT or SIGTERM (exit
// 130).
var errInterrupted = errors.New("interrupted")

// untilInterrupted runs f and returns its results; once ctx is done it
// waits at most interruptGrace more for f, then returns ctx's error and
// leaves f to the end of the process.
func untilInterrupted[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	t := time.NewTimer(interruptGrace)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		var zero T
		return zero, ctx.Err()
	}
}

// interrupted returns the error of a command cut short: one line saying
// what its output directory dir holds ("" when nothing is saved) — a run,
// its history so far, the cells of a matrix or the steps of a sweep run so
// far, a comparison or the runs of one so far. Every command reports an
// interrupt with it.
func interrupted(dir string) error {
	switch {
	case dir == "":
		return fmt.Errorf("%w: nothing written", errInterrupted)
	case exists(filepath.Join(dir, reports.SummaryFile)):
		return fmt.Errorf("%w: the run finished and was written to %s", errInterrupted, dir)
	case exists(filepath.Join(dir, reports.HistoryFile)):
		return fmt.Errorf("%w: wrote the history so far to %s (not checked; idembench check %s)", errInterrupted, dir, dir)
	case exists(filepath.Join(dir, matrix.JSONFile)):
		return fmt.Errorf("%w: wrote the cells run so far to %s (%s, %s; the others did not run)", errInterrupted, dir, matrix.MarkdownFile, matrix.JSONFile)
	case exists(filepath.Join(dir, sweep.JSONFile)):
		return fmt.Errorf("%w: wrote the steps run so far to %s (%s, capacity.md)", errInterrupted, dir, sweep.JSONFile)
	case exists(filepath.Join(dir, reports.CompareMarkdownFile)):
		return fmt.Errorf("%w: wrote the comparison of the runs that finished to %s (%s; an unfinished run keeps its history so far)",
			errInterrupted, dir, reports.CompareMarkdownFile)
	case hasRunDirs(dir):
		return fmt.Errorf("%w: wrote the runs so far to %s (not compared)", errInterrupted, dir)
	}
	return fmt.Errorf("%w: nothing written", errInterrupted)
}

// hasRunDirs reports whether a directory of dir holds a run.
func hasRunDirs(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() && isRunDir(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
