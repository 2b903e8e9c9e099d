package multiproc

import (
	"testing"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// TestMissing: an effect the backend ledger holds but no stream recorded
// (its worker died after applying it) is added, and so is its call when no
// recorded call stands for it.
func TestMissing(t *testing.T) {
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindCall, Client: 3, Key: "a", Exec: "3.1", FP: "fa", Outcome: history.Executed, Call: 1, Return: 2},
		{Kind: history.KindEffect, Client: 3, Key: "a", Exec: "3.1", Call: 1, Return: 2, Applied: true},
		{Kind: history.KindCall, Client: 5, Key: "b", FP: "fb", Outcome: history.Unknown, Call: 1, Return: history.NoReturn},
		{Kind: history.KindCall, Client: 6, Key: "c", FP: "fc", Outcome: history.InProgress, Call: 1, Return: 2},
	}}
	x := index(h)
	if got := x.keys(); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Fatalf("keys %v", got)
	}
	applied := func(key, exec string) workload.Applied {
		return workload.Applied{At: 10, Effect: workload.Effect{Key: key, Exec: exec, Token: idem.Token(4)}}
	}
	cases := []struct {
		name          string
		e             workload.Applied
		effect, call  bool
		wantCallFP    string
		wantEffectTok uint64
	}{
		{"recorded effect and call", applied("a", "3.1"), false, false, "", 0},
		{"effect lost, call given up on", applied("b", "5.2"), true, false, "", 4},
		{"effect and call lost", applied("c", "7.1"), true, true, "fc", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := x.missing(c.e)
			var effect, call *history.Op
			for i := range ops {
				switch ops[i].Kind {
				case history.KindEffect:
					effect = &ops[i]
				case history.KindCall:
					call = &ops[i]
				}
			}
			if (effect != nil) != c.effect || (call != nil) != c.call {
				t.Fatalf("added %+v; want effect %t, call %t", ops, c.effect, c.call)
			}
			if effect != nil && (!effect.Applied || effect.Token != c.wantEffectTok || effect.Return != history.NoReturn || effect.Client != clientOf(c.e.Exec)) {
				t.Fatalf("effect %+v", *effect)
			}
			if call != nil && (call.Outcome != history.Unknown || call.FP != c.wantCallFP || call.Call >= c.e.At) {
				t.Fatalf("call %+v", *call)
			}
		})
	}
}

func TestClientOf(t *testing.T) {
	for exec, want := range map[string]int{"12.3": 12, "p7.1": 7, "x": 0} {
		if got := clientOf(exec); got != want {
			t.Errorf("clientOf(%q) = %d, want %d", exec, got, want)
		}
	}
}
