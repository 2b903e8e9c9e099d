package chaos_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

func TestProcessPauses(t *testing.T) {
	pause := chaos.Fault{Kind: history.FaultPause, Count: 3, Start: time.Second, End: 2 * time.Second, Duration: 500 * time.Millisecond}
	crash := chaos.Fault{Kind: history.FaultCrash, Count: 2}
	cases := []struct {
		name    string
		faults  []chaos.Fault
		runFor  time.Duration
		wantLen int
	}{
		{"pauses", []chaos.Fault{pause, crash}, 10 * time.Second, 3},
		{"cut at the end of traffic", []chaos.Fault{pause}, time.Second + 400*time.Millisecond, 0},
		{"crashes only", []chaos.Fault{crash}, 10 * time.Second, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := chaos.ProcessPauses(7, c.faults, 4, c.runFor)
			if len(got) != c.wantLen {
				t.Fatalf("%d pauses, want %d: %+v", len(got), c.wantLen, got)
			}
			for _, p := range got {
				if p.At < pause.Start || p.At >= pause.End || p.For != pause.Duration || p.Worker < 0 || p.Worker >= 4 {
					t.Fatalf("pause out of its window: %+v", p)
				}
			}
			if d := cmp.Diff(got, chaos.ProcessPauses(7, c.faults, 4, c.runFor)); d != "" {
				t.Fatalf("same seed, different schedule:\n%s", d)
			}
		})
	}
	a, b := chaos.ProcessPauses(1, []chaos.Fault{pause}, 4, time.Minute), chaos.ProcessPauses(2, []chaos.Fault{pause}, 4, time.Minute)
	if cmp.Equal(a, b) {
		t.Fatal("seeds 1 and 2 give the same schedule")
	}
}

func TestProcessCrashes(t *testing.T) {
	faults := []chaos.Fault{{Kind: history.FaultCrash, Count: 2}, {Kind: history.FaultPause, Count: 5}, {Kind: history.FaultCrash, Probability: 0.5}}
	got := chaos.ProcessCrashes(faults)
	if len(got) != 3 || got[0] != faults[0] || got[2] != faults[2] {
		t.Fatalf("crashes %+v", got)
	}
}
