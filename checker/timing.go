package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/idembench/idembench/history"
)

// The timing invariants. They need the lease TTL the run used, which a
// history of the real-time harness cannot promise its store honoured to
// the nanosecond, so Check does not run them: CheckTiming adds them to a
// report, and the simulation (package sim), whose clock is exact, does.
const (
	// T1LiveTakeover: no take-over happens while the superseded lease is
	// live in true time, that is before LeaseTTL has passed since its
	// last grant or renewal. A store that judges expiry by an app server's
	// skewed clock breaks it.
	T1LiveTakeover Invariant = "T1"
	// T2TakeoverLiveness: a key answers "in progress" only while one of
	// its leases can be live: within LeaseTTL + Slack of the last grant or
	// renewal (or of a grant or renewal whose reply was lost). A store
	// that extends a dead holder's lease when a retry asks ("touch on
	// read") keeps a key blocked for as long as clients retry, which the
	// end-of-run probe (I6) does not see.
	T2TakeoverLiveness Invariant = "T2"
)

// TimingInvariants lists the invariants CheckTiming adds, in report order.
var TimingInvariants = []Invariant{T1LiveTakeover, T2TakeoverLiveness}

func init() {
	invariantNames[T1LiveTakeover] = "no take-over of a live lease"
	invariantNames[T2TakeoverLiveness] = "take-over liveness"
}

// Timing is what CheckTiming needs to know of the run.
type Timing struct {
	// LeaseTTL is the engine's lease TTL. Zero: CheckTiming does nothing.
	LeaseTTL time.Duration
	// Slack is what T2 adds to LeaseTTL before a key that answers "in
	// progress" counts as blocked.
	Slack time.Duration
	// ClockSlack is how far the store's clock may be from the history's
	// timeline: T1 allows a take-over that far before LeaseTTL has passed.
	// Zero in the simulation, where both are one virtual clock; a real-time
	// run on a server's clock needs a few milliseconds.
	ClockSlack time.Duration
	// MaxViolations caps the violations listed per invariant; zero
	// means 100.
	MaxViolations int
}

// CheckTiming checks T1 and T2 on h and adds them to rep: their results
// after rep's invariants, their violations after rep's, and the verdict
// becomes a violation if they found one. A history without lease ops
// (the engine's observer was not recorded) has nothing to check.
func CheckTiming(rep *Report, h *history.History, t Timing) {
	if t.LeaseTTL <= 0 || h == nil {
		return
	}
	if t.MaxViolations <= 0 {
		t.MaxViolations = 100
	}
	res := []InvariantResult{{Invariant: T1LiveTakeover}, {Invariant: T2TakeoverLiveness}}
	var found [2][]Violation
	p := partitionByKey(h.Ops)
	ttl, slack := int64(t.LeaseTTL), int64(t.Slack)
	for k, key := range p.keys {
		g := p.group(k)
		var renewals, takeovers, conflicts []int32
		for _, i := range g {
			op := &h.Ops[i]
			switch {
			case op.Kind == history.KindLease && op.Transition == history.TransitionTakenOver:
				takeovers = append(takeovers, i)
				renewals = append(renewals, i)
			case op.Kind == history.KindLease && (op.Transition == history.TransitionAcquired ||
				op.Transition == history.TransitionHeartbeat):
				renewals = append(renewals, i)
			case op.Kind == history.KindLease && op.Transition == history.TransitionBackendError &&
				(op.Label == "acquire" || op.Label == "heartbeat"):
				renewals = append(renewals, i) // may have granted or renewed
			case op.Kind == history.KindCall && op.Outcome == history.InProgress:
				conflicts = append(conflicts, i)
			}
		}
		if len(renewals) == 0 {
			continue
		}
		res[0].Checked += len(takeovers)
		for _, i := range takeovers {
			if v, ok := liveTakeover(h.Ops, key, i, renewals, ttl, int64(t.ClockSlack)); ok {
				res[0].Violations++
				if len(found[0]) < t.MaxViolations {
					found[0] = append(found[0], v)
				}
			}
		}
		res[1].Checked += len(conflicts)
		for _, i := range conflicts {
			if v, ok := blockedKey(h.Ops, key, i, renewals, ttl+slack); ok {
				res[1].Violations++ // one per key: its first blocked answer
				if len(found[1]) < t.MaxViolations {
					found[1] = append(found[1], v)
				}
				break
			}
		}
	}
	rep.Invariants = append(rep.Invariants, res...)
	rep.Violations = append(rep.Violations, found[0]...)
	rep.Violations = append(rep.Violations, found[1]...)
	if res[0].Violations+res[1].Violations > 0 {
		rep.Verdict = VerdictViolation
	}
}

// liveTakeover checks the take-over ops[to] against the latest grant or
// renewal of the token it superseded that certainly came before it.
func liveTakeover(ops []history.Op, key string, to int32, renewals []int32, ttl, slack int64) (Violation, bool) {
	t := &ops[to]
	last := int32(-1)
	for _, r := range renewals {
		op := &ops[r]
		if op.Token != t.PrevToken || op.Transition == history.TransitionBackendError || op.Return > t.Call {
			continue
		}
		if last < 0 || op.Call > ops[last].Call {
			last = r
		}
	}
	if last < 0 || t.Return >= ops[last].Call+ttl-slack {
		return Violation{}, false
	}
	l := &ops[last]
	return Violation{Invariant: T1LiveTakeover, Key: key, Message: fmt.Sprintf(
		"token %d took over token %d %s after its %s, before its lease of %s could expire: the holder's lease was live in true time",
		t.Token, t.PrevToken, time.Duration(t.Return-l.Call), l.Transition, time.Duration(ttl)),
		Ops: timingRefs(ops, []int32{last, to})}, true
}

// blockedKey checks the "in progress" answer ops[c]: some grant or renewal
// that may precede it must be recent enough for a lease to be live.
func blockedKey(ops []history.Op, key string, c int32, renewals []int32, bound int64) (Violation, bool) {
	call := &ops[c]
	last := int32(-1)
	for _, r := range renewals {
		op := &ops[r]
		if op.Call > call.Return {
			continue
		}
		if last < 0 || op.Return > ops[last].Return {
			last = r
		}
	}
	if last < 0 || call.Call < ops[last].Return+bound {
		return Violation{}, false
	}
	l := &ops[last]
	return Violation{Invariant: T2TakeoverLiveness, Key: key, Message: fmt.Sprintf(
		"the key answered in progress %s after the last grant or renewal of any of its leases (%s of token %d), past the lease TTL and its slack (%s): no lease could be live, the key was blocked",
		time.Duration(call.Call-l.Return), l.Transition, l.Token, time.Duration(bound)),
		Ops: timingRefs(ops, []int32{last, c})}, true
}

// timingRefs returns the op refs of idx, in Call order.
func timingRefs(ops []history.Op, idx []int32) []OpRef {
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	out := make([]OpRef, len(idx))
	for i, j := range idx {
		out[i] = OpRef{Index: int(j), Op: ops[j]}
	}
	return out
}
