package history

import (
	"strings"
	"testing"
)

func TestKindText(t *testing.T) {
	for _, k := range []Kind{KindCall, KindEffect, KindFault, KindLease} {
		b, err := k.MarshalText()
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		var got Kind
		if err := got.UnmarshalText(b); err != nil || got != k {
			t.Errorf("round trip %v: got %v, %v", k, got, err)
		}
	}
	if _, err := Kind(0).MarshalText(); err == nil {
		t.Error("zero Kind marshals")
	}
	var k Kind
	if err := k.UnmarshalText([]byte("probe")); err == nil {
		t.Error(`"probe" parses as a kind; a probe is a call with Probe set`)
	}
}

func TestOutcomeText(t *testing.T) {
	for o := OutcomeNone; o < numOutcomes; o++ {
		b, err := o.MarshalText()
		if err != nil {
			t.Fatalf("%v: %v", o, err)
		}
		got, err := ParseOutcome(string(b))
		if err != nil || got != o {
			t.Errorf("round trip %v: got %v, %v", o, got, err)
		}
	}
	if _, err := ParseOutcome("timeout"); err == nil {
		t.Error("unknown outcome name parses")
	}
	if _, err := numOutcomes.MarshalText(); err == nil {
		t.Error("invalid outcome marshals")
	}
}

func TestOpValidate(t *testing.T) {
	call := Op{Kind: KindCall, Key: "k", Call: 10, Return: 20, Outcome: Executed, Resp: "aa", Token: 1}
	tests := []struct {
		name string
		edit func(*Op)
		want string // substring of the error, "" for valid
	}{
		{"valid call", func(*Op) {}, ""},
		{"valid unknown call", func(op *Op) { op.Outcome, op.Resp, op.Return = Unknown, "", NoReturn }, ""},
		{"valid effect", func(op *Op) { op.Kind, op.Outcome, op.Resp, op.Applied = KindEffect, OutcomeNone, "", true }, ""},
		{"valid unknown effect", func(op *Op) { op.Kind, op.Outcome, op.Resp = KindEffect, Unknown, "" }, ""},
		{"valid fault", func(op *Op) { op.Kind, op.Outcome, op.Resp, op.Label = KindFault, OutcomeNone, "", "pause" }, ""},
		{"zero kind", func(op *Op) { op.Kind = 0 }, "invalid kind"},
		{"return before call", func(op *Op) { op.Return = 5 }, "before its call"},
		{"call without outcome", func(op *Op) { op.Outcome = OutcomeNone }, "without outcome"},
		{"executed without resp", func(op *Op) { op.Resp = "" }, "without resp"},
		{"replayed without resp", func(op *Op) { op.Outcome, op.Resp = Replayed, "" }, "without resp"},
		{"failed without resp", func(op *Op) { op.Outcome, op.Resp = Failed, "" }, "without resp"},
		{"applied call", func(op *Op) { op.Applied = true }, "applied"},
		{"effect with call outcome", func(op *Op) { op.Kind = KindEffect }, "effect op with outcome executed"},
		{"effect probe", func(op *Op) { op.Kind, op.Outcome, op.Probe = KindEffect, OutcomeNone, true }, "probe"},
		{"fault with outcome", func(op *Op) { op.Kind = KindFault }, "fault op"},
		{"valid fault of a kind", func(op *Op) { *op = Fault(FaultPartition, "net partition", 1, 2) }, ""},
		{"fault of an unknown kind", func(op *Op) { *op = Fault("flood", "", 1, 2) }, `unknown kind "flood"`},
		{"fault kind on a call", func(op *Op) { op.Fault = FaultCrash }, "call op with a fault kind"},
		{"bad outcome", func(op *Op) { op.Outcome = numOutcomes }, "invalid outcome"},
		{"valid grant", func(op *Op) {
			*op = Op{Kind: KindLease, Key: "k", Call: 1, Return: 2, Token: 3, Transition: TransitionAcquired}
		}, ""},
		{"valid take-over", func(op *Op) {
			*op = Op{Kind: KindLease, Key: "k", Call: 1, Return: 2, Token: 3, PrevToken: 2, Transition: TransitionTakenOver}
		}, ""},
		{"lease without transition", func(op *Op) { *op = Op{Kind: KindLease, Key: "k", Call: 1, Return: 2, Token: 3} }, "unknown transition"},
		{"lease with unknown transition", func(op *Op) {
			*op = Op{Kind: KindLease, Key: "k", Call: 1, Return: 2, Token: 3, Transition: "stolen"}
		}, "unknown transition"},
		{"lease with outcome", func(op *Op) {
			*op = Op{Kind: KindLease, Key: "k", Call: 1, Return: 2, Outcome: Executed, Transition: TransitionCompleted}
		}, "lease op with outcome"},
		{"prev token on a grant", func(op *Op) {
			*op = Op{Kind: KindLease, Key: "k", Call: 1, Return: 2, Token: 3, PrevToken: 1, Transition: TransitionAcquired}
		}, "prev_token"},
		{"transition on a call", func(op *Op) { op.Transition = TransitionAcquired }, "lease transition"},
		{"prev token on a call", func(op *Op) { op.PrevToken = 1 }, "prev_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := call
			tt.edit(&op)
			err := op.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestResolveEffects(t *testing.T) {
	h := &History{Ops: []Op{
		{Kind: KindEffect, Key: "a", Token: 1, Outcome: Unknown, Call: 1, Return: NoReturn},
		{Kind: KindEffect, Key: "b", Token: 2, Outcome: Unknown, Call: 1, Return: NoReturn},
		{Kind: KindEffect, Key: "c", Token: 3, Outcome: Unknown, Call: 1, Return: NoReturn},
		{Kind: KindCall, Key: "a", Outcome: Unknown, Call: 1, Return: NoReturn},
	}}
	resolved, unresolved := h.ResolveEffects(func(op *Op) (bool, bool) {
		switch op.Key {
		case "a":
			return true, true
		case "b":
			return false, true
		}
		return false, false
	})
	if resolved != 2 || unresolved != 1 {
		t.Fatalf("ResolveEffects = %d, %d; want 2, 1", resolved, unresolved)
	}
	if op := h.Ops[0]; op.Outcome != OutcomeNone || !op.Applied || op.Return != NoReturn {
		t.Errorf("a: %+v", op)
	}
	if op := h.Ops[1]; op.Outcome != OutcomeNone || op.Applied {
		t.Errorf("b: %+v", op)
	}
	if h.Ops[2].Outcome != Unknown || h.Ops[3].Outcome != Unknown {
		t.Errorf("unresolved effect or call changed: %+v", h.Ops[2:])
	}
	if _, u := h.ResolveEffects(nil); u != 1 {
		t.Errorf("nil lookup: unresolved = %d, want 1", u)
	}
}
