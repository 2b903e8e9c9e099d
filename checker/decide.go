package checker

import (
	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// useDecide enables the decision procedure; tests and benchmarks turn it
// off to exercise the witness and Porcupine.
var useDecide = true

// decide decides I4 for the model ops of one key (from modelOps) in time
// linear in their number, without a search. ok is false when the ops are
// outside its domain (a call that may commit carries no fingerprint, so a
// later replay would bind it): the caller then falls back to the witness
// and Porcupine.
//
// Why it is exact. In any legal linearization the key commits at most once
// and applies at most one effect, so a linearization is: the ops before
// the commit point c, the commit, the ops after it. Giving every op a point
// inside its [Call, Return] (ties in any order: real time forces a before
// b only when a returns before b is called), the model's rules become
// bounds on c alone:
//
//   - in_progress, and a mismatch with the committer's fingerprint, must
//     come before c: Call <= c;
//   - replayed, and a failed without a token that is not the committer,
//     must come after c: Return >= c, and their fingerprints must be the
//     committer's (their responses are one, or I3 has failed already);
//   - executed needs the effect first: the applied effect's Call <= c (or
//     the earliest unresolved effect's, when none is known applied);
//   - no effect is applied after the commit, a stored failure included: an
//     applied effect's Call <= c whatever commits;
//   - everything else (rejected and unresolved effects, unknown calls that
//     did nothing, other mismatches) can go anywhere.
//
// The committer is the one executed or failed-with-token call (two of them
// are illegal), else one of the failed-without-token and unknown calls,
// each tried in O(1) against precomputed extremes; with no replay to
// explain, committing nothing is legal too.
//
// b is scratch space, reused across keys (nil allocates a new one).
func decide(pops []porcupine.Operation, b *bounds) (legal, ok bool) {
	if b == nil {
		b = new(bounds)
	}
	b.reset()
	for i := range pops {
		if !b.add(pops, i) {
			return false, true
		}
	}
	if b.applied > 1 {
		return false, true // a second applied effect
	}
	if b.mandatory < 0 && b.minRetI < 0 {
		return true, true // nothing needs a commit: commit nothing
	}
	if b.applied == 1 {
		b.effectCall = b.appliedCall
	} else {
		b.effectCall = b.unresolved
	}
	if b.mandatory >= 0 {
		return b.feasible(pops, b.mandatory)
	}
	for _, i := range b.candidates {
		if pops[i].Input.(*history.Op).FP == "" {
			return false, false // a replay would bind the fingerprint: out of the domain
		}
	}
	for _, i := range b.candidates {
		if ok, _ := b.feasible(pops, i); ok {
			return true, true
		}
	}
	return false, true
}

// bounds is what decide gathers in its one pass over a key's model ops.
type bounds struct {
	mandatory    int // index of the executed or failed-with-token call, or -1
	appliedCall  int64
	applied      int
	unresolved   int64            // earliest Call of an unresolved effect
	effectCall   int64            // Call of the effect an executed commit needs
	inProgCall   int64            // latest Call of an in_progress answer
	mismatchCall map[string]int64 // latest Call of a mismatch, per fingerprint
	resp         string
	minRet       int64 // smallest Return of a replay, its index, and the second smallest
	minRetI      int
	minRet2      int64
	fp1          string         // the first fingerprint of a replay, and its replays
	fp1Count     int            //
	fpCount      map[string]int // replays per other fingerprint, rarely needed
	fpTotal      int            // replays with a fingerprint
	candidates   []int          // calls that may commit when no call must
}

// reset empties b for another key, keeping its candidates' memory.
func (b *bounds) reset() {
	*b = bounds{mandatory: -1, appliedCall: history.NoReturn, unresolved: history.NoReturn,
		inProgCall: -1 << 63, minRet: history.NoReturn, minRetI: -1, minRet2: history.NoReturn,
		candidates: b.candidates[:0]}
}

// replays returns how many replays carry fingerprint fp.
func (b *bounds) replays(fp string) int {
	if fp == b.fp1 {
		return b.fp1Count
	}
	return b.fpCount[fp]
}

// add accounts for pops[i]; false means the key is certainly illegal (two
// commits or two responses).
func (b *bounds) add(pops []porcupine.Operation, i int) bool {
	op := pops[i].Input.(*history.Op)
	if op.Kind == history.KindEffect {
		if op.Outcome == history.Unknown {
			b.unresolved = min(b.unresolved, op.Call)
		} else if op.Applied { // a rejected effect changes nothing
			b.applied++
			b.appliedCall = min(b.appliedCall, op.Call)
		}
		return true
	}
	if op.Outcome.HasResponse() {
		if b.resp == "" {
			b.resp = op.Resp
		} else if op.Resp != b.resp {
			return false // one of them is replayed against the other
		}
	}
	switch {
	case op.Outcome == history.Executed || (op.Outcome == history.Failed && op.Token != 0):
		if b.mandatory >= 0 {
			return false // two commits
		}
		b.mandatory = i
	case op.Outcome == history.Failed || op.Outcome == history.Replayed:
		if op.Outcome == history.Failed {
			b.candidates = append(b.candidates, i)
		}
		if ret := pops[i].Return; ret < b.minRet {
			b.minRet2, b.minRet, b.minRetI = b.minRet, ret, i
		} else if ret < b.minRet2 {
			b.minRet2 = ret
		}
		switch {
		case op.FP == "":
		case b.fp1 == "" || op.FP == b.fp1:
			b.fp1, b.fp1Count = op.FP, b.fp1Count+1
		default:
			if b.fpCount == nil {
				b.fpCount = make(map[string]int)
			}
			b.fpCount[op.FP]++
		}
		if op.FP != "" {
			b.fpTotal++
		}
	case op.Outcome == history.InProgress:
		b.inProgCall = max(b.inProgCall, op.Call)
	case op.Outcome == history.Mismatch && op.FP != "":
		if b.mismatchCall == nil {
			b.mismatchCall = make(map[string]int64)
		}
		if c, seen := b.mismatchCall[op.FP]; !seen || op.Call > c {
			b.mismatchCall[op.FP] = op.Call
		}
	case op.Outcome == history.Unknown && op.Kind == history.KindCall:
		b.candidates = append(b.candidates, i)
	}
	return true
}

// feasible reports whether pops[i] can be the commit: whether some commit
// point inside its span meets every bound. ok is false when it carries no
// fingerprint.
func (b *bounds) feasible(pops []porcupine.Operation, i int) (legal, ok bool) {
	op := pops[i].Input.(*history.Op)
	if op.FP == "" {
		return false, false
	}
	if b.fpTotal-b.replays(op.FP) != 0 {
		return false, true // a replay of another fingerprint
	}
	lo := max(pops[i].Call, b.inProgCall)
	if c, seen := b.mismatchCall[op.FP]; seen {
		lo = max(lo, c)
	}
	if op.Outcome == history.Executed {
		lo = max(lo, b.effectCall) // NoReturn when there is no effect: infeasible
	} else if b.applied == 1 {
		lo = max(lo, b.appliedCall) // no effect after a failure (or any commit)
	}
	hi := min(pops[i].Return, b.minRet)
	if i == b.minRetI {
		hi = min(pops[i].Return, b.minRet2)
	}
	return lo <= hi && lo != history.NoReturn, true
}
