package blackbox

import (
	"strings"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// TestExplainI4: the checker's bare I4 message ("not linearizable against
// the key model") is said in words: which answer contradicts which, with
// clients, attempts, times and responses, and the effect count. Other
// messages are left as they are.
func TestExplainI4(t *testing.T) {
	ms := int64(1_000_000)
	call := func(client int, at int64, out history.Outcome, resp string) history.Op {
		return history.Op{Kind: history.KindCall, Client: client, Attempt: 1, Key: "k", Call: at * ms, Return: (at + 2) * ms, Outcome: out, Resp: resp}
	}
	ops := []history.Op{
		call(1, 10, history.Executed, "aaaaaaaaaaaaaaaa"),
		call(2, 11, history.Replayed, "aaaaaaaaaaaaaaaa"),
		call(3, 30, history.Replayed, "bbbbbbbbbbbbbbbb"),
		effectOp("k", 10*ms, 12*ms, true, "e1"),
	}
	h := &history.History{Ops: ops}
	var refs []checker.OpRef
	for i, op := range ops {
		refs = append(refs, checker.OpRef{Index: i, Op: op})
	}
	rep := checker.Report{Violations: []checker.Violation{
		{Invariant: checker.I4Linearizable, Key: "k", Message: i4Bare, Ops: refs},
		{Invariant: checker.I4Linearizable, Key: "k", Message: "not linearizable: different responses returned (I3)", Ops: refs},
	}}
	explainI4(h, &rep)
	got := rep.Violations[0].Message
	for _, want := range []string{i4Bare + ": ", "the replayed answer to client 3 (attempt 1, sent at 20.0 ms, returned at 22.0 ms) with response bbbbbbbbbbbb",
		"contradicts the executed answer to client 1 (attempt 1, sent at 0.0 ms", "the oracle counted 1 applied effect(s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	if rep.Violations[1].Message != "not linearizable: different responses returned (I3)" {
		t.Errorf("an explained message was rewritten: %q", rep.Violations[1].Message)
	}
}
