package harnesstest

import (
	"os"
	"slices"
	"testing"

	"github.com/idembench/idembench/harness"
)

// TestPlanIsSeedMajor: every scenario gets the first seed before any gets
// the second, every pair is planned once, and the second round starts
// elsewhere than the first, so that a budget that cuts it short does not
// always drop the scenarios at the end of the list.
func TestPlanIsSeedMajor(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	rounds := plan([]int64{1, 2}, names)
	if len(rounds) != 2 {
		t.Fatalf("%d rounds, want one per seed", len(rounds))
	}
	for k, round := range rounds {
		var got []string
		for _, r := range round {
			if r.seed != int64(k+1) {
				t.Errorf("round %d holds %s", k, r.label())
			}
			got = append(got, r.scenario)
		}
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, names) {
			t.Errorf("round %d runs %v, want each of %v once", k, got, names)
		}
	}
	if first, second := rounds[0][0].scenario, rounds[1][0].scenario; first != "a" || second != "d" {
		t.Errorf("rounds start at %s and %s, want a and d (halfway down)", first, second)
	}
	if last := rounds[1][len(names)-1].scenario; last != "c" {
		t.Errorf("the second round ends with %s, want c: the scenarios a cut budget drops move", last)
	}
}

// TestReplayLineSelectsTheRun: a failure's replay line is a go test
// command run from the package directory that selects the failing run's
// subtest, or the whole test and the options that narrow it when the run
// had no subtest of its own.
func TestReplayLineSelectsTheRun(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cd := "cd " + harness.ShellQuote(dir) + " && "
	r := planned{seed: 2, scenario: "mismatched-requests"}
	tests := []struct{ name, want string }{
		{"TestMyStore/seed2/mismatched-requests", cd + "go test -count=1 -run '^TestMyStore$/^seed2$/^mismatched-requests$' ."},
		{"TestMyStore", cd + `go test -count=1 -run '^TestMyStore$' . (with harnesstest.Scenarios("mismatched-requests"), harnesstest.Seeds(2) to make this run alone)`},
	}
	for _, tt := range tests {
		if got := replayLine(tt.name, r); got != tt.want {
			t.Errorf("replayLine(%q):\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}
