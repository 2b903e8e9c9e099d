package consume

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// StatsFile is the file of a run directory that holds Result.Stats and
// Result.Resources.
const StatsFile = "consume.json"

// WriteReport writes res into dir (created if needed): what WriteHistory
// writes, and the run reports of package reports (summary.json,
// report.md, report.html, plots), in which every processed delivery is a
// call. It returns the reports' Summary.
func WriteReport(dir string, res *Result, opts reports.Options) (*reports.Summary, error) {
	if err := WriteHistory(dir, res); err != nil {
		return nil, err
	}
	return reports.WriteRunReport(dir, res.History, res.Report, opts)
}

// WriteHistory writes the history of res into dir (created if needed),
// as reports.HistoryFile, and its Stats and Resources as StatsFile: all
// there is of a run cut short (Run's Result with a cancelled ctx), which
// `idembench check` can check later. A Result without a History is an
// error wrapping ErrConfig.
func WriteHistory(dir string, res *Result) error {
	if res == nil || res.History == nil {
		return fmt.Errorf("%w: no history to write", ErrConfig)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, reports.HistoryFile), func(w io.Writer) error { return history.Encode(w, res.History) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, StatsFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Stats     Stats    `json:"stats"`
			Resources []string `json:"resources"`
		}{res.Stats, res.Resources})
	})
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteSummary writes a few human-readable lines about res to w: the
// verdict with the violated invariants, throughput, end-to-end latency,
// redeliveries and the faults that struck.
func WriteSummary(w io.Writer, res *Result) error {
	s, rep := &res.Stats, &res.Report
	h := res.History.Header
	var b strings.Builder
	fmt.Fprintf(&b, "consume %s: seed %d, %s on %s, %s consumers\n", h.Options["broker"], h.Seed, h.Engine, h.Backend, h.Options["consumers"])
	fmt.Fprintf(&b, "verdict: %s", rep.Verdict)
	if v := rep.Violated(); len(v) > 0 {
		fmt.Fprintf(&b, " (violated: %v; %d keys with more than one effect)", v, s.DoubledKeys)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "messages: %d distinct, %d published (%d duplicates, %d publish retries), %.1f messages/s\n",
		s.Messages, s.Published, s.Duplicates, s.PublishRetries, s.Throughput)
	fmt.Fprintf(&b, "deliveries: %d, redeliveries: %d; acked %d, requeued %d, dead-lettered %d (in the dead-letter queue: %d)\n",
		s.Deliveries, s.Redeliveries, s.Acked, s.Requeued, s.DeadLetterActions, s.DeadLettered)
	if s.Batches > 0 {
		fmt.Fprintf(&b, "batch claims: %d batches of %.1f deliveries on average (at most %s)\n",
			s.Batches, float64(s.BatchedDeliveries)/float64(s.Batches), h.Options["batch"])
	}
	fmt.Fprintf(&b, "publish to effect: p50 %s, p90 %s, p99 %s, max %s over %d messages\n",
		s.EndToEnd.P50, s.EndToEnd.P90, s.EndToEnd.P99, s.EndToEnd.Max, s.EndToEnd.Count)
	fmt.Fprintf(&b, "faults: %d crashes before ack, %d pauses, %d overlapped duplicates, %d consumer restarts, %d server restarts\n",
		s.Crashes, s.Pauses, s.Overlaps, s.Restarts, s.ServerRestarts)
	_, err := io.WriteString(w, b.String())
	return err
}
