package checker

import (
	"fmt"
	"slices"

	"github.com/idembench/idembench/history"
)

// I9UncertainHeld: an uncertain key is never executed again without a
// resolution.
const I9UncertainHeld Invariant = "I9"

// checkUncertain checks I9 on the ops of one key (g, sorted by Call): no
// lease is granted (acquired or taken_over) after the key was recorded
// uncertain (a lease op "uncertain" that returned before the grant was
// called) unless a resolution of that uncertain record (a lease op
// "resolved" with its token) may have come first (was called before the
// grant returned). With retention > 0 (nanoseconds) a grant called a
// retention or more after the uncertain write was called is not compared:
// the record may have expired.
//
// An uncertain key that is still unresolved at the end of the run is held
// for an operator by design, not stuck: the I6 violation of end-of-run
// probes that all got unknown after it was recorded is withdrawn.
func checkUncertain(ops []history.Op, key string, g []int32, r *keyResult, retention int64) {
	var uncertain, resolved, grants []int32
	for _, i := range g {
		op := &ops[i]
		if op.Kind != history.KindLease {
			continue
		}
		switch {
		case op.Transition == history.TransitionUncertain:
			uncertain = append(uncertain, i)
		case op.Transition == history.TransitionResolved:
			resolved = append(resolved, i)
		case op.Transition.Grant():
			grants = append(grants, i)
		}
	}
	if len(uncertain) == 0 {
		return
	}
	r.checked[slot(I9UncertainHeld)] += len(uncertain)
	resolvedBefore := func(u *history.Op, by int64) bool {
		return slices.ContainsFunc(resolved, func(j int32) bool { return ops[j].Token == u.Token && ops[j].Call < by })
	}
	for _, ui := range uncertain {
		u := &ops[ui]
		for _, gi := range grants {
			gr := &ops[gi]
			if gr.Call <= u.Return || (retention > 0 && gr.Call-u.Call >= retention) || resolvedBefore(u, gr.Return) {
				continue
			}
			r.add(ops, I9UncertainHeld, key, fmt.Sprintf(
				"key recorded uncertain under token %d, then granted again (token %d) without a resolution", u.Token, gr.Token),
				[]int32{ui, gi})
			break
		}
	}
	last := &ops[uncertain[len(uncertain)-1]]
	if resolvedBefore(last, history.NoReturn) {
		return
	}
	r.violations = slices.DeleteFunc(r.violations, func(v Violation) bool {
		if v.Invariant != I6Liveness {
			return false
		}
		for _, ref := range v.Ops {
			if ref.Op.Outcome != history.Unknown || ref.Op.Call <= last.Return {
				return false
			}
		}
		return true
	})
}
