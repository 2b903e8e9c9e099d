package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/idembench/idembench/history"
)

// leaseScratch holds one worker's buffers for checkLeases.
type leaseScratch struct {
	grants, byReturn, writes, failures []int32
}

// checkLeases checks I7 and I8 on the ops of one key (g, sorted by Call),
// in O(n log n) for the sort of the key's grants by Return. Real-time order
// is the only order used: grant A precedes op B when A returned before B
// was called; overlapping ops are never compared.
//
// I7: every grant carries a token higher than every grant that precedes
// it, no two grants carry the same token, and a take-over's PrevToken is
// lower than its token and not lower than any token granted before it (the
// lease it superseded was the latest); and, over every grant whatever its
// timing, no two take-overs report the same previous token (takeovers.go).
//
// I8: no accepted write (completed, failed, heartbeat, released) carries a
// token lower than a grant that precedes it, and no failure is stored (a
// failed lease write, or a failed call that ran) by an execution whose own
// effect the sink rejected (a known rejection, not one resolved from a lost
// acknowledgement).
func checkLeases(ops []history.Op, key string, g []int32, r *keyResult, sc *leaseScratch) {
	grants, writes, failures := sc.grants[:0], sc.writes[:0], sc.failures[:0]
	var stale map[string]int32 // exec -> its rejected effect
	for _, i := range g {
		op := &ops[i]
		switch {
		case op.Kind == history.KindLease && op.Transition.Grant():
			grants = append(grants, i)
		case op.Kind == history.KindLease && op.Transition.AcceptedWrite():
			writes = append(writes, i)
			if op.Transition == history.TransitionFailed && op.Exec != "" {
				failures = append(failures, i)
			}
		case op.Kind == history.KindCall && op.Outcome == history.Failed && op.Token != 0 && op.Exec != "":
			failures = append(failures, i)
		case op.Kind == history.KindEffect && op.Outcome == history.OutcomeNone && !op.Applied &&
			op.Return != history.NoReturn && op.Exec != "":
			if stale == nil {
				stale = make(map[string]int32)
			}
			stale[op.Exec] = i
		}
	}
	byReturn := append(sc.byReturn[:0], grants...)
	slices.SortFunc(byReturn, func(a, b int32) int { return cmp.Compare(ops[a].Return, ops[b].Return) })
	defer func() { sc.grants, sc.byReturn, sc.writes, sc.failures = grants, byReturn, writes, failures }()

	r.checked[slot(I7TokenOrder)] += len(grants)
	msg, idx := grantOrder(ops, grants, byReturn)
	if msg == "" {
		msg, idx = takeoverTwice(ops, grants)
	}
	if msg != "" {
		r.add(ops, I7TokenOrder, key, msg, idx)
	}
	r.checked[slot(I8NoSupersededWrite)] += len(writes) + len(failures)
	if msg, idx := supersededWrite(ops, writes, byReturn); msg != "" {
		r.add(ops, I8NoSupersededWrite, key, msg, idx)
	}
	for _, i := range failures {
		e, ok := stale[ops[i].Exec]
		if !ok {
			continue
		}
		r.add(ops, I8NoSupersededWrite, key, fmt.Sprintf(
			"failure stored with token %d by execution %s, whose own effect (token %d) the sink rejected as stale: a superseded lease stored the key's answer",
			ops[i].Token, ops[i].Exec, ops[e].Token), []int32{e, i})
		return // one stored failure is enough to show it
	}
}

// latestBefore walks grants by Return: advance moves *next past every
// grant that returned before t and keeps the highest token among them.
type latestBefore struct {
	byReturn []int32
	next     int
	tok      uint64
	idx      int32
}

func (l *latestBefore) advance(ops []history.Op, t int64) {
	for l.next < len(l.byReturn) && ops[l.byReturn[l.next]].Return < t {
		if g := l.byReturn[l.next]; l.idx < 0 || ops[g].Token > l.tok {
			l.tok, l.idx = ops[g].Token, g
		}
		l.next++
	}
}

// grantOrder returns the first I7 violation among grants (sorted by Call)
// and the ops that show it, or "".
func grantOrder(ops []history.Op, grants, byReturn []int32) (string, []int32) {
	lb := latestBefore{byReturn: byReturn, idx: -1}
	var seen map[uint64]int32 // for keys with many grants; a scan for the others
	if len(grants) > 16 {
		seen = make(map[uint64]int32, len(grants))
	}
	for n, i := range grants {
		op := &ops[i]
		j, dup := int32(-1), false
		if seen != nil {
			j, dup = seen[op.Token]
			seen[op.Token] = i
		} else if k := slices.IndexFunc(grants[:n], func(j int32) bool { return ops[j].Token == op.Token }); k >= 0 {
			j, dup = grants[k], true
		}
		if dup {
			return fmt.Sprintf("two leases granted with token %d (called at %d and %d): a token must never repeat",
				op.Token, ops[j].Call, op.Call), []int32{j, i}
		}
		lb.advance(ops, op.Call)
		if op.Transition == history.TransitionTakenOver && op.PrevToken >= op.Token {
			return fmt.Sprintf("take-over granted token %d but reports previous token %d, which is not lower",
				op.Token, op.PrevToken), []int32{i}
		}
		if lb.idx < 0 {
			continue
		}
		if op.Token <= lb.tok {
			return fmt.Sprintf("lease %s with token %d (called at %d) after token %d was granted (returned at %d): tokens went backwards",
				op.Transition, op.Token, op.Call, lb.tok, ops[lb.idx].Return), []int32{lb.idx, i}
		}
		if op.Transition == history.TransitionTakenOver && op.PrevToken < lb.tok {
			return fmt.Sprintf("take-over with token %d reports previous token %d, but token %d had been granted before it (returned at %d): it superseded a lease that was already superseded",
				op.Token, op.PrevToken, lb.tok, ops[lb.idx].Return), []int32{lb.idx, i}
		}
	}
	return "", nil
}

// supersededWrite returns the first accepted write (writes sorted by Call)
// whose token is lower than that of a grant that returned before it was
// called, and the ops that show it, or "".
func supersededWrite(ops []history.Op, writes, byReturn []int32) (string, []int32) {
	lb := latestBefore{byReturn: byReturn, idx: -1}
	for _, i := range writes {
		op := &ops[i]
		lb.advance(ops, op.Call)
		if lb.idx >= 0 && op.Token < lb.tok {
			return fmt.Sprintf("%s accepted with token %d (called at %d) after token %d was granted (returned at %d): a superseded lease wrote",
				op.Transition, op.Token, op.Call, lb.tok, ops[lb.idx].Return), []int32{lb.idx, i}
		}
	}
	return "", nil
}
