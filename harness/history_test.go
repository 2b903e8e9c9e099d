package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// TestHistoryModes checks what a run directory keeps of the history: of
// an unsafe cell (a plain sink under gc-pause: double executions) with
// --history=sampled every op of the sampled keys and nothing else but the
// faults (and a re-check of the sample finds exactly the run's violations
// on those keys); with none no history.jsonl. summary.json's options say
// which. A full history is what every other run test writes.
func TestHistoryModes(t *testing.T) {
	cases := []struct {
		mode     harness.HistoryMode
		scenario string
		sink     string
		d        time.Duration
	}{
		{harness.HistorySampled, "gc-pause", "plain", time.Second},
		{harness.HistoryNone, "duplicates", "fenced", 200 * time.Millisecond},
	}
	for _, c := range cases {
		mode := c.mode
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			o, err := harness.Run(context.Background(), harness.Spec{
				Engine: engine(t, harness.ReferenceEngine), ScenarioName: c.scenario, Sink: c.sink,
				Overrides: harness.Overrides{Seed: 42, Duration: c.d}, Out: dir, History: mode,
			})
			if err != nil {
				t.Fatal(err)
			}
			opt := o.Summary.Options[harness.HistoryOption]
			path := filepath.Join(dir, reports.HistoryFile)
			if mode == harness.HistoryNone {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Fatalf("--history=none wrote %s (%v)", path, err)
				}
				if opt != harness.HistoryOptionNone {
					t.Fatalf("summary option %q, want %q", opt, harness.HistoryOptionNone)
				}
				return
			}
			written, err := history.DecodeFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := o.History.Ops
			if mode == harness.HistorySampled {
				if opt != harness.HistoryOptionSampled || written.Header.Options[harness.HistoryOption] != opt {
					t.Fatalf("summary option %q, header option %q, want %q", opt, written.Header.Options[harness.HistoryOption], harness.HistoryOptionSampled)
				}
				want = slices.DeleteFunc(slices.Clone(want), func(op history.Op) bool {
					return op.Kind != history.KindFault && op.Key != "" && !harness.SampledKey(op.Key)
				})
				if n, all := len(want), len(o.History.Ops); n == 0 || n > all/4 {
					t.Fatalf("the sample keeps %d of %d ops, want about 1 in %d", n, all, harness.SampleOneIn)
				}
			} else if opt != "" {
				t.Fatalf("a full history's summary carries option %q", opt)
			}
			if diff := cmp.Diff(want, written.Ops); diff != "" {
				t.Fatalf("written ops differ (-want +got):\n%s", diff)
			}
			// The re-check of what was written finds the run's violations
			// on the keys it holds, and no other.
			var wantKeys, gotKeys []string
			for _, v := range o.Report.Violations {
				if mode == harness.HistoryFull || harness.SampledKey(v.Key) {
					wantKeys = append(wantKeys, string(v.Invariant)+" "+v.Key)
				}
			}
			for _, v := range checker.Check(written, checker.Options{Timeout: 30 * time.Second}).Violations {
				gotKeys = append(gotKeys, string(v.Invariant)+" "+v.Key)
			}
			slices.Sort(wantKeys)
			slices.Sort(gotKeys)
			if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
				t.Errorf("re-check of the written history: violations differ (-run +re-check):\n%s", diff)
			}
			if len(o.Report.Violations) == 0 {
				t.Fatalf("the unsafe cell found no violation: the test proves nothing")
			}
		})
	}
}

func TestParseHistoryMode(t *testing.T) {
	for in, want := range map[string]harness.HistoryMode{"": harness.HistoryFull, "full": harness.HistoryFull, "sampled": harness.HistorySampled, "none": harness.HistoryNone} {
		if got, err := harness.ParseHistoryMode(in); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := harness.ParseHistoryMode("gz"); err == nil {
		t.Error("gz: no error")
	}
	_, err := harness.Run(context.Background(), harness.Spec{Engine: engine(t, harness.ReferenceEngine), History: "all"})
	if err == nil {
		t.Error("Spec.History \"all\": the run started")
	}
}
