package checker

import (
	"testing"
	"time"

	"github.com/idembench/idembench/history"
)

func leaseOp(tr history.Transition, tok, prev uint64, at time.Duration) history.Op {
	return history.Op{Kind: history.KindLease, Key: "k", Transition: tr, Token: tok, PrevToken: prev, Call: int64(at), Return: int64(at)}
}

func callOp(o history.Outcome, at time.Duration) history.Op {
	return history.Op{Kind: history.KindCall, Key: "k", Outcome: o, Call: int64(at), Return: int64(at)}
}

func TestCheckTiming(t *testing.T) {
	const ttl = 30 * time.Second
	s := time.Second
	tests := []struct {
		name   string
		ops    []history.Op
		t1, t2 int
	}{
		{"take-over after expiry", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			callOp(history.InProgress, 10*s),
			leaseOp(history.TransitionTakenOver, 2, 1, 30*s),
		}, 0, 0},
		{"take-over before expiry", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			leaseOp(history.TransitionTakenOver, 2, 1, 29*s),
		}, 1, 0},
		{"a renewal moves the expiry", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			leaseOp(history.TransitionHeartbeat, 1, 0, 10*s),
			leaseOp(history.TransitionTakenOver, 2, 1, 35*s),
		}, 1, 0},
		{"a renewal of another token does not", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			leaseOp(history.TransitionHeartbeat, 7, 0, 10*s),
			leaseOp(history.TransitionTakenOver, 2, 1, 35*s),
		}, 0, 0},
		{"in progress long after the last renewal", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			callOp(history.InProgress, 20*s),
			callOp(history.InProgress, 32*s),
			callOp(history.InProgress, 40*s),
		}, 0, 1},
		{"in progress within the slack", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			callOp(history.InProgress, 30*s+500*time.Millisecond),
		}, 0, 0},
		{"a lost acquire reply may have granted", []history.Op{
			leaseOp(history.TransitionAcquired, 1, 0, 0),
			{Kind: history.KindLease, Key: "k", Transition: history.TransitionBackendError, Label: "acquire", Call: int64(25 * s), Return: int64(25 * s)},
			callOp(history.InProgress, 50*s),
		}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &history.History{Ops: tc.ops}
			rep := Check(h, Options{})
			before := rep.Verdict
			CheckTiming(&rep, h, Timing{LeaseTTL: ttl, Slack: s})
			if got := rep.Result(T1LiveTakeover).Violations; got != tc.t1 {
				t.Errorf("T1 violations = %d, want %d (%v)", got, tc.t1, rep.Violations)
			}
			if got := rep.Result(T2TakeoverLiveness).Violations; got != tc.t2 {
				t.Errorf("T2 violations = %d, want %d (%v)", got, tc.t2, rep.Violations)
			}
			if tc.t1+tc.t2 > 0 && rep.Verdict != VerdictViolation {
				t.Errorf("verdict %s with a timing violation", rep.Verdict)
			}
			if tc.t1+tc.t2 == 0 && rep.Verdict != before {
				t.Errorf("verdict changed from %s to %s without a timing violation", before, rep.Verdict)
			}
		})
	}
}

func TestCheckTimingWithoutTTLDoesNothing(t *testing.T) {
	h := &history.History{Ops: []history.Op{
		leaseOp(history.TransitionAcquired, 1, 0, 0),
		leaseOp(history.TransitionTakenOver, 2, 1, time.Second),
	}}
	rep := Check(h, Options{})
	n := len(rep.Invariants)
	CheckTiming(&rep, h, Timing{})
	if len(rep.Invariants) != n {
		t.Errorf("CheckTiming without a lease TTL added invariants: %v", rep.Invariants[n:])
	}
}
