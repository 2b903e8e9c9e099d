package checker

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/history"
)

// TestEpochs checks how a key's ops are split into the lives of its record
// with a retention of 1000: by token for ops that carry one, by response
// for replays, by Return for in_progress answers, and into every later
// life for unknown calls.
func TestEpochs(t *testing.T) {
	ops := []history.Op{
		0: {Kind: history.KindCall, Call: 100, Return: 200, Outcome: history.Executed, Token: 1, Resp: "r1"},
		1: {Kind: history.KindEffect, Call: 120, Return: 130, Token: 1, Applied: true},
		2: {Kind: history.KindCall, Call: 300, Return: history.NoReturn, Outcome: history.Unknown},
		3: {Kind: history.KindCall, Call: 1050, Return: 1060, Outcome: history.Replayed, Resp: "r1"},
		4: {Kind: history.KindCall, Call: 1090, Return: 2010, Outcome: history.InProgress},
		5: {Kind: history.KindCall, Call: 2000, Return: 2100, Outcome: history.Executed, Token: 5, Resp: "r5"},
		6: {Kind: history.KindLease, Call: 2000, Return: 2001, Token: 5, Transition: history.TransitionAcquired},
		7: {Kind: history.KindEffect, Call: 2020, Return: 2030, Token: 5, Applied: true},
		8: {Kind: history.KindEffect, Call: 2500, Return: 2510, Token: 1, Applied: true}, // stale: life 0
		9: {Kind: history.KindCall, Call: 2600, Return: 2610, Outcome: history.Replayed, Resp: "r5"},
	}
	g := make([]int32, len(ops))
	for i := range g {
		g[i] = int32(i)
	}
	tests := []struct {
		name      string
		retention int64
		want      [][]int32
	}{
		{"no retention", 0, [][]int32{g}},
		{"retention longer than the key's span", 10_000, [][]int32{g}},
		{"expired once", 1000, [][]int32{{0, 1, 2, 3, 8}, {2, 4, 5, 7, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, epochs(ops, g, tt.retention)); diff != "" {
				t.Errorf("lives (-want +got):\n%s", diff)
			}
		})
	}
}
