package checker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/idembench/idembench/history"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func load(t testing.TB, name string) *history.History {
	t.Helper()
	h, err := history.DecodeFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRecordedHistories checks every hand-written history in testdata
// against its known verdict and the exact set of violated invariants. Every
// file in testdata must appear here.
func TestRecordedHistories(t *testing.T) {
	tests := []struct {
		file    string
		verdict Verdict
		want    []Invariant
	}{
		{"ok_single_execution_replays.jsonl", VerdictOK, nil},
		{"ok_concurrent_duplicates_in_progress.jsonl", VerdictOK, nil},
		{"ok_crash_unknown_then_takeover.jsonl", VerdictOK, nil},
		{"ok_recovery_completes_with_first_effect.jsonl", VerdictOK, nil},
		{"bad_double_effect.jsonl", VerdictViolation, []Invariant{I1AtMostOnce, I4Linearizable}},
		{"bad_two_concurrent_executions.jsonl", VerdictViolation, []Invariant{I1AtMostOnce, I4Linearizable}},
		{"bad_replay_different_response.jsonl", VerdictViolation, []Invariant{I3ReplayConsistency, I4Linearizable}},
		{"bad_phantom_success.jsonl", VerdictViolation, []Invariant{I2NoPhantomSuccess, I4Linearizable}},
		{"bad_stale_effect_after_newer.jsonl", VerdictViolation, []Invariant{I1AtMostOnce, I4Linearizable, I5Fencing}},
		{"bad_stale_completion_after_newer_effect.jsonl", VerdictViolation, []Invariant{I5Fencing}},
		{"bad_probe_stuck.jsonl", VerdictViolation, []Invariant{I6Liveness}},
		{"bad_in_progress_after_commit.jsonl", VerdictViolation, []Invariant{I4Linearizable}},
		{"bad_mismatch_same_fingerprint.jsonl", VerdictViolation, []Invariant{I4Linearizable}},
		{"ok_lease_takeover_fenced.jsonl", VerdictOK, nil},
		{"ok_retention_expired_then_executed_again.jsonl", VerdictOK, nil},
		{"bad_token_restart_after_release.jsonl", VerdictViolation, []Invariant{I7TokenOrder, I8NoSupersededWrite}},
		{"bad_takeover_of_superseded_lease.jsonl", VerdictViolation, []Invariant{I7TokenOrder}},
		{"bad_two_overlapping_takeovers_of_one_token.jsonl", VerdictViolation, []Invariant{I7TokenOrder}},
		{"bad_effect_after_stored_failure.jsonl", VerdictViolation, []Invariant{I4Linearizable}},
		{"ok_effect_then_failure_stored.jsonl", VerdictOK, nil},
		{"bad_unfenced_heartbeat.jsonl", VerdictViolation, []Invariant{I8NoSupersededWrite}},
		{"bad_failure_stored_after_stale_effect.jsonl", VerdictViolation, []Invariant{I7TokenOrder, I8NoSupersededWrite}},
		{"bad_failure_after_own_stale_effect_calls_only.jsonl", VerdictViolation, []Invariant{I8NoSupersededWrite}},
		{"bad_retention_stale_effect_after_newer_life.jsonl", VerdictViolation, []Invariant{I1AtMostOnce, I4Linearizable, I5Fencing}},
		// The first execution's call is unknown (the client gave up); only
		// its completed lease step shows the commit and starts retention.
		{"ok_retention_expired_after_unknown_commit.jsonl", VerdictOK, nil},
		{"bad_reexecuted_within_retention_after_unknown_commit.jsonl", VerdictViolation, []Invariant{I1AtMostOnce, I4Linearizable}},
	}
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.ContainsFunc(tests, func(tt struct {
			file    string
			verdict Verdict
			want    []Invariant
		}) bool {
			return tt.file == filepath.Base(f)
		}) {
			t.Errorf("%s has no expected verdict in this table", f)
		}
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".jsonl"), func(t *testing.T) {
			h := load(t, tt.file)
			dir := t.TempDir()
			rep := Check(h, Options{VisualizeDir: dir})
			if rep.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s; violations: %s", rep.Verdict, tt.verdict, summarize(rep))
			}
			if diff := cmp.Diff(tt.want, rep.Violated()); diff != "" {
				t.Errorf("violated invariants (-want +got):\n%s\n%s", diff, summarize(rep))
			}
			for _, v := range rep.Violations {
				if v.Key == "" || v.Message == "" || len(v.Ops) == 0 {
					t.Errorf("violation without key, message or ops: %+v", v)
				}
				if (v.Invariant == I7TokenOrder || v.Invariant == I8NoSupersededWrite) && !strings.Contains(v.Message, "token") {
					t.Errorf("%s violation does not name the tokens: %s", v.Invariant, v.Message)
				}
				if v.Invariant != I4Linearizable {
					continue
				}
				if v.VisualizationPath == "" {
					t.Errorf("I4 violation on %q has no visualization; notes: %v", v.Key, rep.Notes)
					continue
				}
				html, err := os.ReadFile(v.VisualizationPath)
				if err != nil || !strings.Contains(string(html), "<html") {
					t.Errorf("visualization %s: %v", v.VisualizationPath, err)
				}
			}
			if tt.verdict == VerdictOK {
				entries, _ := os.ReadDir(dir)
				if len(entries) != 0 {
					t.Errorf("visualizations written for a legal history: %v", entries)
				}
			}
		})
	}
}

// TestRetentionMakesReexecutionLegal checks that the same history is a
// double execution when the header gives no retention (records are assumed
// to outlive the run) and legal when it says the first record expired.
func TestRetentionMakesReexecutionLegal(t *testing.T) {
	h := load(t, "ok_retention_expired_then_executed_again.jsonl")
	if rep := Check(h, Options{}); rep.Verdict != VerdictOK {
		t.Fatalf("with retention: %s:%s", rep.Verdict, summarize(rep))
	}
	for _, ret := range []time.Duration{0, 10 * time.Second} {
		h.Header.Retention = ret
		rep := Check(h, Options{})
		if rep.Verdict != VerdictViolation || !slices.Contains(rep.Violated(), I1AtMostOnce) {
			t.Errorf("retention %v: verdict %s, violated %v; want I1", ret, rep.Verdict, rep.Violated())
		}
	}
}

func summarize(rep Report) string {
	var b strings.Builder
	for _, v := range rep.Violations {
		b.WriteString("\n  " + string(v.Invariant) + " " + v.Key + ": " + v.Message)
	}
	for _, n := range rep.Notes {
		b.WriteString("\n  note: " + n)
	}
	return b.String()
}
