package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// historyOption returns the harness.HistoryOption of the history file at
// path, read from its header alone ("" for a full history, or a file
// whose header does not read: the command that reads it says why).
func historyOption(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	r, err := history.NewReader(f)
	if err != nil {
		return ""
	}
	return r.Header().Options[harness.HistoryOption]
}

// noHistory returns the error of a command that needs the history of the
// run directory dir, which has none, or nil when dir has a history file
// (or is no run directory: the command then says what is wrong). A run
// made with --history=none says so.
func noHistory(cmd, dir string) error {
	_, err := os.Stat(filepath.Join(dir, reports.HistoryFile))
	if !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	s, serr := reports.ReadSummaryFile(filepath.Join(dir, reports.SummaryFile))
	if serr == nil && s.Options[harness.HistoryOption] == harness.HistoryOptionNone {
		return usage("%s %s: the run was made with --history=none and has no %s: there is nothing to re-check or redraw (its summary.json and reports are as the run wrote them; run it again with --history=full or sampled to keep one)",
			cmd, dir, reports.HistoryFile)
	}
	return usage("%s %s: no %s in the directory", cmd, dir, reports.HistoryFile)
}

// sampledNote is the note check prints on a sampled history.
const sampledNote = "the history holds every op of 1 key in 16 (--history=sampled): the verdict covers those keys only, and the figures above are the sample's (the run's summary.json has the whole run's)"
