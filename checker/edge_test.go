package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
)

func TestCheckEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		h       *history.History
		verdict Verdict
		note    string
	}{
		{"nil history", nil, VerdictInconclusive, "invalid"},
		{"empty history", &history.History{}, VerdictInconclusive, "no calls"},
		{"faults only", &history.History{Ops: []history.Op{{Kind: history.KindFault, Call: 1, Return: 2, Label: "pause"}}},
			VerdictInconclusive, "no calls"},
		{"invalid op", &history.History{Ops: []history.Op{{Kind: history.KindCall, Call: 5, Return: 1, Outcome: history.Error}}},
			VerdictInconclusive, "op 0"},
		{"unsupported version", &history.History{Header: history.Header{Version: 9}}, VerdictInconclusive, "version 9"},
		{"only no-op calls", &history.History{Ops: []history.Op{{Kind: history.KindCall, Call: 1, Return: 2, Outcome: history.Error}}},
			VerdictOK, "I6 was not checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Check(tt.h, Options{})
			if rep.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s:%s", rep.Verdict, tt.verdict, summarize(rep))
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", rep.Notes, tt.note)
			}
			if len(rep.Invariants) != len(Invariants) {
				t.Errorf("%d invariant results", len(rep.Invariants))
			}
		})
	}
}

// TestBudgetSpentIsInconclusive checks that keys not searched before the
// budget ran out make the verdict inconclusive, never ok, and that keys
// with one possible order are still checked.
func TestBudgetSpentIsInconclusive(t *testing.T) {
	defer func(w, d bool) { useWitness, useDecide = w, d }(useWitness, useDecide)
	useWitness, useDecide = false, false
	h := genHistory(3, genOptions{ops: 3000, keys: 300})
	rep := Check(h, Options{Timeout: time.Nanosecond})
	if rep.Verdict != VerdictInconclusive {
		t.Fatalf("verdict %s with a 1 ns budget", rep.Verdict)
	}
	i4 := rep.Result(I4Linearizable)
	if i4.Inconclusive == 0 || i4.Checked+i4.Inconclusive != 300 || len(rep.InconclusiveKeys) != min(i4.Inconclusive, 100) {
		t.Errorf("I4 %+v, %d inconclusive keys listed", i4, len(rep.InconclusiveKeys))
	}
	// The same history with a real budget passes.
	if rep := Check(h, Options{Timeout: -1, Workers: 1}); rep.Verdict != VerdictOK {
		t.Errorf("unlimited budget: %s:%s", rep.Verdict, summarize(rep))
	}
}

func TestMaxViolationsCapsListNotCounts(t *testing.T) {
	h := &history.History{}
	for k := range 30 {
		key := fmt.Sprintf("k%d", k)
		h.Ops = append(h.Ops,
			history.Op{Kind: history.KindCall, Key: key, Call: 1, Return: 2, Outcome: history.Executed, Token: 1, Resp: "r"},
			history.Op{Kind: history.KindCall, Key: key, Call: 3, Return: 4, Outcome: history.InProgress, Probe: true})
	}
	rep := Check(h, Options{MaxViolations: 5})
	for _, inv := range []Invariant{I2NoPhantomSuccess, I4Linearizable, I6Liveness} {
		if got := rep.Result(inv).Violations; got != 30 {
			t.Errorf("%s counted %d violations, want 30", inv, got)
		}
	}
	per := map[Invariant]int{}
	for _, v := range rep.Violations {
		per[v.Invariant]++
	}
	for inv, n := range per {
		if n != 5 {
			t.Errorf("%s listed %d violations, want 5", inv, n)
		}
	}
	if rep.Violations[0].Key != "k0" {
		t.Errorf("violations not in key order: first is %s", rep.Violations[0].Key)
	}
}

func TestFileName(t *testing.T) {
	tests := []struct{ key, prefix string }{
		{"order-1", "order-1.html"},
		{"tenant:a/b", "tenant_a_b-"},
		{"tenant_a_b", "tenant_a_b.html"},
		{"", "-"},
		{"..", "_.-"},
		{strings.Repeat("x", 300), strings.Repeat("x", 100) + "-"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := fileName(tt.key)
		if !strings.HasPrefix(got, tt.prefix) || !strings.HasSuffix(got, ".html") || strings.ContainsAny(got, "/\\:") {
			t.Errorf("fileName(%q) = %q, want prefix %q", tt.key, got, tt.prefix)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("keys %q and %q share file %q", tt.key, other, got)
		}
		seen[got] = tt.key
	}
}
