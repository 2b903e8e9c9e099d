package checker

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
)

// hotKeyHistory builds a legal history of n ops on one key where no call
// is known to have executed: the first attempt and a third of all later
// calls end unknown, so every unknown call stays in the search and may be
// the one that committed. This is the worst case for the linearizability
// search.
func hotKeyHistory(n int, seed uint64) *history.History {
	rng := rand.New(rand.NewPCG(seed, 1))
	h := &history.History{}
	add := func(op history.Op) {
		op.Key, op.FP = "hot", "f"
		h.Ops = append(h.Ops, op)
	}
	add(history.Op{Kind: history.KindCall, Client: 0, Call: 0, Return: history.NoReturn, Outcome: history.Unknown})
	add(history.Op{Kind: history.KindEffect, Client: 0, Call: 10, Return: 20, Token: 1, Applied: true})
	for i := 0; len(h.Ops) < n; i++ {
		t := int64(100 + i*10)
		c := 1 + rng.IntN(50)
		switch rng.IntN(3) {
		case 0:
			add(history.Op{Kind: history.KindCall, Client: c, Call: t, Return: history.NoReturn, Outcome: history.Unknown})
		default:
			add(history.Op{Kind: history.KindCall, Client: c, Call: t, Return: t + int64(rng.IntN(30)), Outcome: history.Replayed, Resp: "r"})
		}
	}
	return h
}

// TestHotKeyFinishesWithinTimeout checks that a 10,000-op history on one
// key with thousands of unknown outcomes comes back within its budget: the
// legal one passes or is inconclusive (never a violation); the one with an
// illegal in_progress at the end, which forces Porcupine to explore the
// ways the unknown calls may have committed, is a violation or
// inconclusive (never ok), bounded by time or by search memory. None may
// hang.
func TestHotKeyFinishesWithinTimeout(t *testing.T) {
	legal := hotKeyHistory(10_000, 1)
	illegal := hotKeyHistory(10_000, 1)
	end := illegal.Ops[len(illegal.Ops)-1].Call + 1000
	illegal.Ops = append(illegal.Ops, history.Op{Kind: history.KindCall, Client: 99, Key: "hot", FP: "f",
		Call: end, Return: end + 10, Outcome: history.InProgress})
	tests := []struct {
		name   string
		h      *history.History
		memory int64
		allow  []Verdict
	}{
		{"legal", legal, 0, []Verdict{VerdictOK, VerdictInconclusive}},
		{"illegal tail, time bound", illegal, -1, []Verdict{VerdictViolation, VerdictInconclusive}},
		{"illegal tail, memory bound", illegal, 16 << 20, []Verdict{VerdictViolation, VerdictInconclusive}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const budget = 2 * time.Second
			start := time.Now()
			rep := Check(tt.h, Options{Timeout: budget, SearchMemory: tt.memory})
			elapsed := time.Since(start)
			t.Logf("verdict %s in %v (lin %v), %d unknown calls", rep.Verdict, elapsed,
				rep.Stats.LinearizabilityDuration, rep.Stats.UnknownCalls)
			if !slices.Contains(tt.allow, rep.Verdict) {
				t.Fatalf("verdict %s, want one of %v:%s", rep.Verdict, tt.allow, summarize(rep))
			}
			if rep.Verdict == VerdictInconclusive && (len(rep.InconclusiveKeys) != 1 || rep.Result(I4Linearizable).Inconclusive != 1) {
				t.Errorf("inconclusive without naming the key: %+v", rep)
			}
			// The budget plus time to unwind the search; generous for -race.
			if elapsed > budget+3*time.Second {
				t.Errorf("check took %v with a %v budget", elapsed, budget)
			}
		})
	}
}
