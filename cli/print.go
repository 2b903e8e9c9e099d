package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// maxPrinted caps the violations printed; summary.json has them all (up to
// the checker's cap).
const maxPrinted = 8

func printRun(w io.Writer, o *harness.Outcome) {
	hd := &o.History.Header
	rec := "off"
	if o.Recovery {
		rec = "on"
	}
	loop := "closed loop"
	if r := hd.Options["rate"]; r != "" && r != "0" {
		loop = "open loop at " + r + " req/s"
	}
	if b := hd.Options["batch"]; b != "" {
		loop += ", batches of " + b + " (DoBatch)"
	}
	fmt.Fprintf(w, "config: recovery %s · heartbeat %s · lease TTL %s · %s traffic · %d clients, %s\n",
		rec, hd.Options["heartbeat"], hd.LeaseTTL, o.Duration, o.Clients, loop)
	if note := hd.Options["recovery_note"]; note != "" {
		fmt.Fprintf(w, "note: recovery %s\n", note)
	}
	if o.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", o.Warning)
	}
	s := o.Summary
	printCounts(w, s, o.History)
	fmt.Fprintf(w, "effects: %d applied · %d rejected by fencing · %d keys with more than one applied\n",
		o.Ledger.Applied, o.Ledger.Rejected, o.Ledger.Doubled)
	fmt.Fprint(w, "throughput: ")
	if o.DriverOpsPerSec > 0 { // not measured across worker processes
		fmt.Fprintf(w, "driver %.0f recorded ops/s · ", o.DriverOpsPerSec)
	}
	fmt.Fprintf(w, "%.0f completed calls/s · %.0f successes/s · error rate %.2f%%",
		s.ThroughputPerS, s.SuccessPerS, 100*s.ErrorRate)
	if s.LateSends.Count > 0 {
		fmt.Fprintf(w, " · %d late sends", s.LateSends.Count)
	}
	fmt.Fprintln(w)
	printLatency(w, s)
	printVerdict(w, o.Report)
	for _, m := range missesOf(s) {
		fmt.Fprintf(w, "threshold missed: %s\n", m.Reason)
	}
	fmt.Fprintf(w, "seed: %d\n", hd.Seed)
	if o.Dir != "" {
		fmt.Fprintf(w, "run dir: %s (report.html, report.md, summary.json, %s)\n", o.Dir, historyNote(o.Dir, o.History.Header.Options[harness.HistoryOption]))
	}
	fmt.Fprintf(w, "replay: %s\n", o.Replay)
}

// bigHistory is the size of a full history.jsonl above which the run
// line says how to write less.
const bigHistory = 20 << 20

// historyNote says what the run directory dir holds of the history, as
// option (the header's harness.HistoryOption) says it was written: the
// size of history.jsonl, and how to write less when it is big.
func historyNote(dir, option string) string {
	fi, err := os.Stat(filepath.Join(dir, reports.HistoryFile))
	switch {
	case err != nil && option == harness.HistoryOptionNone:
		return "no " + reports.HistoryFile + ": --history=none"
	case err != nil:
		return "no " + reports.HistoryFile + ": " + err.Error()
	case option == harness.HistoryOptionSampled:
		return fmt.Sprintf("%s %s: 1 key in %d, --history=sampled", reports.HistoryFile, byteSize(fi.Size()), harness.SampleOneIn)
	case fi.Size() > bigHistory:
		return fmt.Sprintf("%s %s; --history=sampled or none writes less", reports.HistoryFile, byteSize(fi.Size()))
	}
	return fmt.Sprintf("%s %s", reports.HistoryFile, byteSize(fi.Size()))
}

// byteSize prints a file size: "94 MB", "5.9 MB", "812 kB", "120 B".
func byteSize(n int64) string {
	const k = 1000
	switch {
	case n >= 10*k*k:
		return fmt.Sprintf("%.0f MB", float64(n)/(k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.0f kB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}

// missesOf returns the thresholds s missed.
func missesOf(s *reports.Summary) []reports.Miss {
	if s.Thresholds == nil {
		return nil
	}
	return s.Thresholds.Misses
}

// printCounts prints the calls per outcome, the faults and the liveness
// probes per outcome.
func printCounts(w io.Writer, s *reports.Summary, h *history.History) {
	c := s.Counts
	faults := strconv.Itoa(c.Faults)
	if by := c.FaultsByKind(); by != "" {
		faults += " (" + by + ")"
	}
	fmt.Fprintf(w, "calls: %d (%s) · faults injected: %s\n", c.Calls, counts(s.Outcomes), faults)
	if c.Probes > 0 {
		probes := map[string]int{}
		for i := range h.Ops {
			if op := &h.Ops[i]; op.Probe {
				probes[op.Outcome.String()]++
			}
		}
		fmt.Fprintf(w, "liveness probes: %d (%s)\n", c.Probes, counts(probes))
	}
}

func printLatency(w io.Writer, s *reports.Summary) {
	l := s.Latency.Overall
	fmt.Fprintf(w, "latency: p50 %s · p90 %s · p99 %s · p99.9 %s · max %s (%d calls measured)\n",
		msDur(l.P50Ms), msDur(l.P90Ms), msDur(l.P99Ms), msDur(l.P999Ms), msDur(l.MaxMs), l.Measured)
}

func printVerdict(w io.Writer, rep checker.Report) {
	var inv []string
	for _, r := range rep.Invariants {
		mark := "ok"
		switch {
		case r.Violations > 0:
			mark = fmt.Sprintf("%d VIOLATED", r.Violations)
		case r.Inconclusive > 0:
			mark = fmt.Sprintf("%d inconclusive", r.Inconclusive)
		case r.Checked == 0:
			mark = "not checked" // nothing to check it on (no probes: I6)
		}
		inv = append(inv, fmt.Sprintf("%s %s", r.Invariant, mark))
	}
	fmt.Fprintf(w, "verdict: %s (%s; %d keys checked in %s)\n", strings.ToUpper(string(rep.Verdict)), strings.Join(inv, " · "), rep.Stats.Keys, rep.Stats.Duration.Round(time.Millisecond))
	for i, v := range rep.Violations {
		if i == maxPrinted {
			fmt.Fprintf(w, "  … %d more in summary.json\n", len(rep.Violations)-maxPrinted)
			break
		}
		fmt.Fprintf(w, "  %s %s key %s: %s\n", v.Invariant, v.Invariant.Name(), v.Key, v.Message)
		if v.VisualizationPath != "" {
			fmt.Fprintf(w, "     visualization: %s\n", v.VisualizationPath)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, " · ")
}

// msDur prints a latency given in milliseconds with a sensible unit.
func msDur(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(100 * time.Nanosecond).String()
}
