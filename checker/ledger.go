package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/idembench/idembench/history"
)

// maxOpsPerViolation caps Violation.Ops so that one bad key cannot make a
// report huge.
const maxOpsPerViolation = 32

// keyResult is everything checking one key produced.
type keyResult struct {
	violations []Violation
	checked    [len(invIndex)]int
	lin        linStatus
	searched   bool
}

// invIndex maps an invariant to its slot in keyResult.checked.
var invIndex = [...]Invariant{I1AtMostOnce, I2NoPhantomSuccess, I3ReplayConsistency, I4Linearizable, I5Fencing, I6Liveness,
	I7TokenOrder, I8NoSupersededWrite, I9UncertainHeld}

func slot(inv Invariant) int { return slices.Index(invIndex[:], inv) }

func (r *keyResult) add(ops []history.Op, inv Invariant, key, msg string, idx []int32) {
	refs := make([]OpRef, 0, min(len(idx), maxOpsPerViolation))
	sorted := slices.Clone(idx)
	slices.SortStableFunc(sorted, func(a, b int32) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	for _, i := range sorted[:min(len(sorted), maxOpsPerViolation)] {
		refs = append(refs, OpRef{Index: int(i), Op: ops[i]})
	}
	if len(idx) > maxOpsPerViolation {
		msg += fmt.Sprintf(" (%d ops, first %d shown)", len(idx), maxOpsPerViolation)
	}
	r.violations = append(r.violations, Violation{Invariant: inv, Key: key, Message: msg, Ops: refs})
}

// keyFacts is what the ledger pass learned about a key that the
// linearizability pass reuses.
type keyFacts struct {
	applied    int  // effects known to be applied
	pending    int  // effects whose outcome is still unknown
	committer  bool // an Executed call, or a Failed call that ran (Token != 0)
	impliesI4  bool // I1 or I3 failed, so the key cannot be linearizable
	impliedWhy string
}

// checkLedger checks I1, I2 and I3 on the ops of one key, or of one life of
// its record (g, sorted by Call), and with whole also I5 and I6 (see
// keyWide), in time linear in len(g), except I5, which sorts the key's
// applied effects.
func checkLedger(ops []history.Op, key string, g []int32, r *keyResult, whole bool) keyFacts {
	var (
		f          keyFacts
		applied    []int32
		successes  []int32
		firstEff   = history.NoReturn // earliest Call of an applied or pending effect
		firstSucc  = history.NoReturn // earliest Return of a success
		firstSuccI int32
		resps      []int32 // first op of each distinct response
		stuck      []int32
		probes     int
	)
	for _, i := range g {
		op := &ops[i]
		if op.Kind == history.KindLease {
			continue // I7 and I8 (leases.go)
		}
		if op.Kind == history.KindEffect {
			switch {
			case op.Outcome == history.Unknown:
				f.pending++
				firstEff = min(firstEff, op.Call)
			case op.Applied:
				applied = append(applied, i)
				firstEff = min(firstEff, op.Call)
			}
			continue
		}
		if op.Outcome == history.Executed || (op.Outcome == history.Failed && op.Token != 0) {
			f.committer = true
		}
		if op.Outcome.Success() {
			successes = append(successes, i)
			if op.Return < firstSucc {
				firstSucc, firstSuccI = op.Return, i
			}
		}
		if op.Outcome.HasResponse() && !slices.ContainsFunc(resps, func(j int32) bool { return ops[j].Resp == op.Resp }) {
			resps = append(resps, i)
		}
		if op.Probe {
			probes++
			switch op.Outcome {
			case history.InProgress, history.Unknown, history.Error:
				stuck = append(stuck, i)
			}
		}
	}
	f.applied = len(applied)

	// I1: at most one applied effect.
	r.checked[slot(I1AtMostOnce)]++
	if len(applied) > 1 {
		toks := make([]string, len(applied))
		for j, i := range applied {
			toks[j] = fmt.Sprint(ops[i].Token)
		}
		r.add(ops, I1AtMostOnce, key, fmt.Sprintf("%d effects applied for one key (tokens %s): double execution",
			len(applied), strings.Join(toks, ", ")), applied)
		f.impliesI4, f.impliedWhy = true, "more than one applied effect (I1)"
	}

	// I2: every success has an applied effect behind it, started before it
	// returned. More than one effect is I1's business.
	r.checked[slot(I2NoPhantomSuccess)] += len(successes)
	switch {
	case len(successes) == 0:
	case len(applied) == 0 && f.pending == 0:
		r.add(ops, I2NoPhantomSuccess, key, fmt.Sprintf("%d success(es) returned but no effect was applied for the key",
			len(successes)), successes)
	case firstEff > firstSucc:
		idx := []int32{firstSuccI}
		if len(applied) > 0 {
			idx = append(idx, applied[0])
		}
		r.add(ops, I2NoPhantomSuccess, key, fmt.Sprintf("a success returned at %d, before any effect for the key started (first at %d)",
			firstSucc, firstEff), idx)
	}

	// I3: one response per key.
	if len(resps) > 0 {
		r.checked[slot(I3ReplayConsistency)]++
	}
	if len(resps) > 1 {
		desc := make([]string, len(resps))
		for j, i := range resps {
			desc[j] = fmt.Sprintf("%s (%s)", short(ops[i].Resp), ops[i].Outcome)
		}
		r.add(ops, I3ReplayConsistency, key, fmt.Sprintf("%d different responses returned for one key: %s",
			len(resps), strings.Join(desc, ", ")), resps)
		f.impliesI4, f.impliedWhy = true, "different responses returned (I3)"
	}

	if whole {
		keyWide(ops, key, g, applied, probes, stuck, r)
	}
	return f
}

// checkKeyWide checks I5 and I6 on all the ops of a key (g, sorted by
// Call) whose lives checkLedger checked one by one.
func checkKeyWide(ops []history.Op, key string, g []int32, r *keyResult) {
	var applied, stuck []int32
	probes := 0
	for _, i := range g {
		op := &ops[i]
		switch {
		case op.Kind == history.KindEffect && op.Applied && op.Outcome == history.OutcomeNone:
			applied = append(applied, i)
		case op.Kind == history.KindCall && op.Probe:
			probes++
			switch op.Outcome {
			case history.InProgress, history.Unknown, history.Error:
				stuck = append(stuck, i)
			}
		}
	}
	keyWide(ops, key, g, applied, probes, stuck, r)
}

// keyWide checks I5 (fencing, in ledger real-time order) given the key's
// applied effects, and I6 given its probes and the stuck ones.
func keyWide(ops []history.Op, key string, g, applied []int32, probes int, stuck []int32, r *keyResult) {
	if len(applied) > 0 {
		r.checked[slot(I5Fencing)]++
		checkFencing(ops, key, g, applied, r)
	}
	r.checked[slot(I6Liveness)] += probes
	if len(stuck) > 0 {
		r.add(ops, I6Liveness, key, fmt.Sprintf("key stuck: %d end-of-run probe(s) got %s", len(stuck), ops[stuck[0]].Outcome), stuck)
	}
}

// checkFencing reports an effect or completion that was accepted with a
// token lower than that of an applied effect that certainly came before it
// (returned before it was called). Overlapping operations have no known
// order and are not compared. Ops with token 0 (an unfenced sink or a
// replay) are skipped.
func checkFencing(ops []history.Op, key string, g, applied []int32, r *keyResult) {
	byReturn := slices.Clone(applied)
	slices.SortFunc(byReturn, func(a, b int32) int { return cmp.Compare(ops[a].Return, ops[b].Return) })
	next := 0
	var maxTok uint64
	var maxI int32 = -1
	for _, i := range g { // g is sorted by Call
		op := &ops[i]
		accepted := (op.Kind == history.KindEffect && op.Applied && op.Outcome == history.OutcomeNone) ||
			op.Outcome == history.Executed || (op.Outcome == history.Failed && op.Token != 0)
		if !accepted || op.Token == 0 {
			continue
		}
		for next < len(byReturn) && ops[byReturn[next]].Return < op.Call {
			if t := ops[byReturn[next]].Token; t > maxTok {
				maxTok, maxI = t, byReturn[next]
			}
			next++
		}
		if maxI >= 0 && op.Token < maxTok {
			what := "effect applied"
			if op.Kind == history.KindCall {
				what = "completion (" + op.Outcome.String() + ") accepted"
			}
			r.add(ops, I5Fencing, key, fmt.Sprintf("%s with token %d after an effect with token %d was applied",
				what, op.Token, maxTok), []int32{maxI, i})
			return // one violation per key is enough to show it
		}
	}
}
