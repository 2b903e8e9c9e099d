package checker

import (
	"testing"

	"github.com/idembench/idembench/history"
)

// TestUncertainHeld: a key recorded uncertain and granted again without a
// resolution violates I9; with a resolution first, or with no grant, it
// holds; an unresolved uncertain key's unknown probe is not I6-stuck.
func TestUncertainHeld(t *testing.T) {
	call := func(c, r int64, o history.Outcome, probe bool) history.Op {
		op := history.Op{Kind: history.KindCall, Key: "k", Call: c, Return: r, Outcome: o, Probe: probe}
		if o == history.Unknown {
			op.Return = history.NoReturn
		}
		return op
	}
	lease := func(c, r int64, tr history.Transition, tok uint64) history.Op {
		return history.Op{Kind: history.KindLease, Key: "k", Call: c, Return: r, Transition: tr, Token: tok}
	}
	effect := func(c, r int64, tok uint64) history.Op {
		return history.Op{Kind: history.KindEffect, Key: "k", Call: c, Return: r, Token: tok, Applied: true, Exec: "e"}
	}
	first := []history.Op{
		lease(1, 2, history.TransitionAcquired, 1),
		effect(3, 4, 1),
		lease(5, 6, history.TransitionUncertain, 1),
		call(0, 0, history.Unknown, false),
	}
	tests := []struct {
		name string
		ops  []history.Op
		i9   bool // I9 violated
		i6   bool // I6 violated
	}{
		{"held until the end", append(first, call(10, 0, history.Unknown, true)), false, false},
		{"granted again", append(first, lease(10, 11, history.TransitionTakenOver, 2), call(9, 12, history.Released, false),
			call(20, 0, history.Unknown, true)), true, false},
		{"resolved, then granted", append(first, lease(8, 9, history.TransitionResolved, 1), lease(10, 11, history.TransitionAcquired, 2),
			call(9, 12, history.Released, false), call(20, 21, history.Released, true)), false, false},
		{"resolved, probe unknown is stuck", append(first, lease(8, 9, history.TransitionResolved, 1),
			call(20, 0, history.Unknown, true)), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Check(&history.History{Ops: tt.ops}, Options{})
			got := map[Invariant]bool{}
			for _, v := range rep.Violations {
				got[v.Invariant] = true
			}
			if got[I9UncertainHeld] != tt.i9 || got[I6Liveness] != tt.i6 {
				t.Fatalf("I9 violated %v (want %v), I6 violated %v (want %v):%s", got[I9UncertainHeld], tt.i9,
					got[I6Liveness], tt.i6, summarize(rep))
			}
			if r := rep.Result(I9UncertainHeld); r.Checked == 0 {
				t.Fatalf("I9 checked nothing: %+v", r)
			}
		})
	}
}
