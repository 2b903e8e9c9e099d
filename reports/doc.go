// Package reports turns a recorded run (a history.History) and the
// checker's verdict on it into figures and files: latency distributions,
// throughput and errors over time, plots, summary.json, report.md and
// report.html, side-by-side comparisons of runs, and threshold checks for
// CI.
//
// # Entry points
//
//   - WriteRunReport(dir, h, rep, opts) writes every file of a run report
//     (the CLI's "idembench run").
//   - Regenerate(dir, opts) rebuilds them from dir/history.jsonl (the CLI's
//     "idembench report DIR"). It reuses the verdict stored in summary.json
//     unless RegenerateOptions.Recheck is set.
//   - LoadRun, Compare and WriteComparison put several runs side by side
//     (the CLI's "idembench compare").
//   - Thresholds.Check lists the performance limits a Summary misses (the
//     CLI exits 4 on any).
//   - Measure and NewSummary give the figures without writing files.
//
// # Plots
//
// The plots are drawn by a Plotter that the program registers
// (RegisterPlotter): package reports/plots, with gonum/plot, registers
// one when it is imported, and the idembench CLI imports it. This package
// itself links no plotting, so a program that only checks runs (a store
// author's test through harness/harnesstest) stays small. Without a
// Plotter every file but the plots is written, and report.html,
// compare.md and capacity.md say that the program draws no plots.
//
// # What is measured
//
// Only workload calls (KindCall ops without Probe) are measured. Liveness
// probes, effects and faults are counted; fault ops also define the fault
// windows (Call to Return; a fault that never healed lasts to the end of
// the run).
//
// Latency is Return - Intended for open-loop calls (Intended != 0), so a
// driver that fell behind cannot hide the wait it caused (no coordinated
// omission), and Return - Call for closed-loop calls. A call whose Return is
// NoReturn (its end is unknown: timeout, crash) is counted in every count
// and in its outcome and phase, but has no latency: it is "unmeasured". An
// unknown call that did record a Return (a client timeout that fired) is
// measured, since its client waited that long.
//
// Latency percentiles come from HDR histograms (1 ns to 24 h, 3 significant
// digits): a percentile is at most 0.1% above the true value. Min, max and
// mean are exact. Large histories are measured by several goroutines, each
// with its own histograms over a range of ops, merged at the end; merging
// HDR histograms is exact, so the figures do not depend on the split.
//
// A late send is an open-loop call whose Call is more than the slack
// (MeasureOptions.LateSlack, 1 ms by default) after its Intended time.
//
// Each call has a phase: before (it ended before the first fault window
// opened), during (its interval, from its start to its Return, overlaps a
// fault window) or after (it started after a window closed and overlaps
// none). A call that never returned is placed by its start alone. Without
// fault windows every call is "before".
//
// Errors are the outcomes that leave a client without a final answer:
// in_progress, released, lease_lost, unknown and error. A stored permanent
// failure (failed) and a fingerprint mismatch are final answers, not errors.
// The error rate is errors / calls.
//
// Throughput is completed calls (those with a known Return, any outcome)
// per second of the run's duration, which spans from the first call's
// start to the last call's end. The timeline cuts the run into 1 s buckets
// (wider when a run would need more than MaxBuckets): completed calls are
// counted in the bucket of their Return, errors in the bucket of their end
// (Return, or Call when they never returned), latencies in the bucket of
// their start, so a stall shows at the time requests were due.
//
// # Files of a run directory
//
// history.jsonl (written by the caller), summary.json, report.md,
// report.html (self-contained: plots embedded as base64 PNG, violations
// linked to the checker's Porcupine HTML files by relative path), and,
// with a Plotter, latency.png/.svg (latency against percentile on a "nines" axis from 0% to
// 99.999%, one line per outcome and one overall), throughput.png/.svg
// (completed calls and errors per second, fault windows shaded and numbered
// as in the reports' fault window table) and latency-over-time.png (a
// sample of at most MaxScatterPoints calls plus p50, p99 and max per
// bucket, fault windows shaded). Both timeline plots end at the end of the
// timeline and shade the drain (from Measurement.TrafficEndS, when new
// requests stopped, to the end: retries and calls still running) hatched in
// gray, labelled "drain" in the plot and in the legend. Fault window numbers
// that would overlap are stacked on up to four rows. A latency figure of a
// group with no measured call is written "—" (Unmeasured), not 0. The HTML
// verdict heading is marked with inline SVG, so it needs no emoji font.
//
// Regenerate keeps the verdict of summary.json; RegenerateRun also says
// whether it did (Regeneration.VerdictSource): without summary.json the
// history is checked again.
//
// # summary.json
//
// One JSON object; schema_version is SchemaVersion (1). Fields may be added
// without a version bump; none is removed or changes meaning without one.
// Durations are in milliseconds (suffix _ms) or seconds (suffix _s), rates
// per second (suffix _per_s), ratios between 0 and 1. Latency figures are 0
// when nothing was measured.
//
//	schema_version      int     format version of this file
//	tool                string  program and version that recorded the run (history header)
//	scenario            string  scenario name (history header)
//	seed                int     seed that reproduces workload and faults (history header)
//	backend             string  store under test, e.g. "redis" (history header)
//	engine              string  engine configuration, e.g. "fenced+recovery" (history header)
//	options             object  remaining engine and workload options, text to text (history header)
//	lease_ttl_ms        float   the engine's lease TTL (history header)
//	start               string  wall-clock start of the run, RFC 3339 (informational)
//	duration_s          float   first call's start to last call's end
//	replay_command      string  exact command that reproduces the run; "" when unknown
//	machine             object  where the run ran:
//	  goos, goarch      string  runtime.GOOS, runtime.GOARCH
//	  num_cpu           int     runtime.NumCPU()
//	  go_version        string  runtime.Version()
//	  hostname          string  os.Hostname(); "" when unknown
//	verdict             string  "ok", "violation", "inconclusive" (checker) or "unchecked"
//	invariants          array   one object per invariant, in checker order (empty when unchecked):
//	  id, name          string  "I1", "at-most-once"
//	  checked           int     keys, success calls or probes checked (see checker.InvariantResult)
//	  violations        int     violations found, all of them
//	  inconclusive      int     keys whose check did not finish
//	violations          array   the violations the checker listed (it caps them per invariant):
//	  invariant, name   string  "I1", "at-most-once"
//	  key               string  the idempotency key
//	  message           string  what is wrong, one sentence
//	  ops               int     operations the checker cited
//	  visualization     string  Porcupine HTML file relative to the run directory; "" when none
//	inconclusive_keys   array   keys whose linearizability check did not finish (capped)
//	notes               array   checker remarks a reader must see (strings)
//	counts              object  calls, completed (Return known), unmeasured (never returned),
//	                            successes (executed + replayed), errors, probes, effects, faults
//	outcomes            object  calls per outcome; every name is present: executed, replayed,
//	                            failed, in_progress, mismatch, released, lease_lost, unknown, error
//	throughput_per_s    float   completed calls per second of duration_s
//	success_per_s       float   successes per second of duration_s
//	error_rate          float   errors / calls
//	late_sends          object  open_loop_calls (calls with an intended time), count (sent more
//	                            than slack_ms late), slack_ms, max_delay_ms (largest Call - Intended)
//	latency             object  overall, by_outcome (every outcome name) and by_phase
//	                            (before, during, after), each with:
//	  calls, measured   int     calls in the group; those with a latency
//	  mean_ms           float   exact mean
//	  p50_ms .. p99_9_ms float  p50_ms, p90_ms, p99_ms, p99_9_ms (HDR, at most 0.1% high)
//	  max_ms            float   exact maximum
//	spectrum            array   overall latency at 101 percentiles evenly spaced on the nines
//	                            axis from 0 to 99.999: {percentile, ms}; empty when nothing measured
//	fault_windows       array   {start_s, end_s, label, client}: seconds since the earliest start
//	                            of a call or fault; client -1 targets no client
//	timeline            object  bucket_s (bucket width), span_s (timeline length), and per bucket:
//	                            completed (calls returned), errors, p99_ms (of calls started in
//	                            the bucket; 0 when none)
//	thresholds          object  present only when thresholds were set: max_p99_ms,
//	                            min_throughput_per_s, max_error_rate (0 = not checked), passed,
//	                            misses [{figure, measured, threshold, unit, reason}]
package reports
