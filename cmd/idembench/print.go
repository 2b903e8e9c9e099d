package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/workload"
)

// maxPrinted caps the violations printed; summary.json has them all (up to
// the checker's cap).
const maxPrinted = 8

func printRun(w io.Writer, o *runOutcome) {
	hd := &o.History.Header
	rec := "off"
	if o.Recovery {
		rec = "on"
	}
	loop := "closed loop"
	if r := hd.Options["rate"]; r != "" && r != "0" {
		loop = "open loop at " + r + " req/s"
	}
	fmt.Fprintf(w, "config: recovery %s · heartbeat %s · lease TTL %s · %s traffic · %d clients, %s\n",
		rec, hd.Options["heartbeat"], hd.LeaseTTL, o.Duration, o.Clients, loop)
	if note := o.History.Header.Options["recovery_note"]; note != "" {
		fmt.Fprintf(w, "note: recovery %s\n", note)
	}
	printOutcomes(w, o.Summary)
	s := o.Summary
	fmt.Fprintf(w, "throughput: %.0f recorded ops/s · %.0f calls/s over %s", s.OpsPerSec, s.CallsPerSec, s.Traffic.Round(time.Millisecond))
	if s.LateSends > 0 {
		fmt.Fprintf(w, " · %d late sends", s.LateSends)
	}
	fmt.Fprintln(w)
	l := s.Latency
	fmt.Fprintf(w, "latency: p50 %s · p90 %s · p99 %s · p99.9 %s · max %s (%d calls)\n",
		dur(l.P50), dur(l.P90), dur(l.P99), dur(l.P999), dur(l.Max), l.N)
	printVerdict(w, o.Report)
	fmt.Fprintf(w, "seed: %d\n", o.History.Header.Seed)
	if o.Dir != "" {
		fmt.Fprintf(w, "run dir: %s\n", o.Dir)
	}
	fmt.Fprintf(w, "replay: %s\n", o.Replay)
}

func printOutcomes(w io.Writer, s workload.Summary) {
	fmt.Fprintf(w, "calls: %d (%s)\n", s.Calls, counts(s.Outcomes))
	fmt.Fprintf(w, "effects: %d applied · %d rejected", s.EffectsApplied, s.EffectsRejected)
	if s.EffectsUnknown > 0 {
		fmt.Fprintf(w, " · %d unknown", s.EffectsUnknown)
	}
	fmt.Fprintf(w, " · faults injected: %d\n", s.Faults)
	if s.Probes > 0 {
		fmt.Fprintf(w, "liveness probes: %d (%s)\n", s.Probes, counts(s.ProbeOutcomes))
	}
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
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, " · ")
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(100 * time.Nanosecond).String()
}
