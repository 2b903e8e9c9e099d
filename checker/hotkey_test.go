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
// the one that committed; the first tenth of the other calls are answered
// in_progress (before any replay), the rest are replays. This is the worst
// case for the linearizability search.
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
		case 1:
			if i < n/10 {
				add(history.Op{Kind: history.KindCall, Client: c, Call: t, Return: t + int64(rng.IntN(30)), Outcome: history.InProgress})
				break
			}
			fallthrough
		default:
			if i < n/10 {
				continue // no replay before the in_progress answers are over
			}
			add(history.Op{Kind: history.KindCall, Client: c, Call: t, Return: t + int64(rng.IntN(30)), Outcome: history.Replayed, Resp: "r"})
		}
	}
	return h
}

// TestHotKeyFinishesWithinTimeout checks that a 10,000-op history on one
// key with thousands of unknown outcomes is decided within its budget: the
// legal one passes; the one with an illegal in_progress at the end, which
// would force Porcupine to explore every way the unknown calls may have
// committed, is a violation. With the decision procedure off, Porcupine
// must still come back within the budget (bounded by time or by search
// memory): legal is ok or inconclusive, illegal a violation or
// inconclusive. None may hang.
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
		search bool // decision procedure off: Porcupine
		allow  []Verdict
	}{
		{"legal", legal, 0, false, []Verdict{VerdictOK}},
		{"illegal tail", illegal, 0, false, []Verdict{VerdictViolation}},
		{"search: legal", legal, 0, true, []Verdict{VerdictOK, VerdictInconclusive}},
		{"search: illegal tail, time bound", illegal, -1, true, []Verdict{VerdictViolation, VerdictInconclusive}},
		{"search: illegal tail, memory bound", illegal, 16 << 20, true, []Verdict{VerdictViolation, VerdictInconclusive}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(old bool) { useDecide = old }(useDecide)
			useDecide = !tt.search
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

// TestHotKeyIsDecided: one key with 200,000 ops (replays, in_progress
// answers, tens of thousands of unknown outcomes) is decided, legal and
// illegal, without a search and well within a 10 s budget even under -race
// (BenchmarkHotKey200k prints the real cost).
func TestHotKeyIsDecided(t *testing.T) {
	h := hotKeyHistory(200_000, 2)
	rep := Check(h, Options{Timeout: 10 * time.Second})
	if rep.Verdict != VerdictOK || rep.Stats.SearchedKeys != 0 || rep.Result(I4Linearizable).Checked != 1 {
		t.Fatalf("verdict %s, %d searched keys, I4 %+v:%s", rep.Verdict, rep.Stats.SearchedKeys, rep.Result(I4Linearizable), summarize(rep))
	}
	end := h.Ops[len(h.Ops)-1].Call + 1000
	h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Client: 99, Key: "hot", FP: "f",
		Call: end, Return: end + 10, Outcome: history.InProgress})
	rep = Check(h, Options{Timeout: 10 * time.Second})
	if rep.Verdict != VerdictViolation || !slices.Contains(rep.Violated(), I4Linearizable) {
		t.Fatalf("illegal tail: verdict %s:%s", rep.Verdict, summarize(rep))
	}
}
