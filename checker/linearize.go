package checker

import (
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// useWitness enables the greedy witness; tests and benchmarks turn it off
// to measure and exercise Porcupine on every key.
var useWitness = true

// linStatus is the I4 outcome for one key.
type linStatus uint8

const (
	linOK        linStatus = iota
	linIllegal             // not linearizable
	linUnknown             // Porcupine's search ran out of time or memory
	linSkipped             // the budget ran out before the key was started
	linImplied             // not linearizable, implied by I1 or I3 without a search
	linUnchecked           // nothing to check (no ops left after filtering)
)

// modelOps appends to out (reusing its memory) the ops of one key that can
// change the model's verdict, as porcupine operations. Left out, because no
// linearization can depend on them: calls that released, lost their lease or failed locally, effects the
// sink rejected, Unknown calls when some call committed (only one commit is
// legal, so they must have done nothing), and unresolved effects when an
// effect is known to be applied (a second one would be illegal anyway).
// Unknown calls and unresolved effects get Return = NoReturn. The second
// result reports whether the ops are totally ordered in time (each returns
// before the next is called), so only one order is possible.
func modelOps(out []porcupine.Operation, ops []history.Op, g []int32, f keyFacts) ([]porcupine.Operation, bool) {
	sequential := true
	last := int64(-1 << 63)
	first := true
	for _, i := range g {
		op := &ops[i]
		if !affectsModel(op, f) {
			continue
		}
		ret := op.Return
		if op.Outcome == history.Unknown {
			ret = history.NoReturn
		}
		if !first && op.Call <= last {
			sequential = false
		}
		first = false
		last = ret
		out = append(out, porcupine.Operation{Input: op, Call: op.Call, Return: ret})
	}
	return out, sequential
}

func affectsModel(op *history.Op, f keyFacts) bool {
	if op.Kind == history.KindLease {
		return false // checked by I7 and I8, not part of the key model
	}
	if op.Kind == history.KindEffect {
		if op.Outcome == history.Unknown {
			return f.applied == 0
		}
		return op.Applied
	}
	switch op.Outcome {
	case history.Released, history.LeaseLost, history.Error:
		return false
	case history.Unknown:
		return !f.committer
	}
	return true
}

// linearize decides I4 for one key: with the decision procedure (decide)
// whenever the key is in its domain, which is the main path; otherwise
// directly when only one order is possible, by a greedy witness when one
// is found, else with Porcupine bounded by deadline (the zero time means
// no bound) and by searchMemory bytes (<= 0 means no bound). searched
// reports whether Porcupine was needed.
func linearize(ops []history.Op, g []int32, f keyFacts, deadline time.Time, searchMemory int64, sc *scratch) (status linStatus, searched bool) {
	if f.impliesI4 {
		return linImplied, false
	}
	pops, sequential := modelOps(sc.pops[:0], ops, g, f)
	sc.pops = pops[:0]
	switch {
	case len(pops) == 0:
		return linUnchecked, false
	}
	if useDecide {
		if legal, ok := decide(pops, &sc.bounds); ok {
			if legal {
				return linOK, false
			}
			return linIllegal, false
		}
	}
	switch {
	case sequential:
		if checkSequential(pops, sc) {
			return linOK, false
		}
		return linIllegal, false
	}
	if useWitness && findWitness(pops, sc) {
		return linOK, false
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return linSkipped, true
	}
	var timedOut bool
	if porcupine.CheckOperations(boundedModel(deadline, maxSteps(len(pops), searchMemory), &timedOut), pops) {
		return linOK, true
	}
	if timedOut {
		return linUnknown, true
	}
	return linIllegal, true
}

// maxSteps converts a memory bound for one search into a bound on legal
// model steps. Porcupine caches at most one (bitset of n bits, state) entry
// per legal step, so steps * (n/8 + per-entry overhead) bounds the cache. A bound <= 0
// means no limit (0 returned).
func maxSteps(n int, memory int64) int {
	if memory <= 0 {
		return 0
	}
	return int(max(memory/int64(n/8+160), 1))
}

// boundedModel returns keyModel with a Step that, once the deadline has
// passed or after maxSteps legal steps, sets *timedOut and refuses every step, so
// Porcupine's search unwinds quickly and reports Illegal, which the caller
// reads as "did not finish". This replaces Porcupine's own timeout, whose
// per-call timer and goroutine handoff cost far more than the search for
// the typical small key (measured: 10 s instead of 1.5 s for 100,000 keys),
// and adds the memory bound Porcupine lacks. The clock is read every 256
// steps. A zero deadline or maxSteps means no limit of that kind. Step runs
// on Porcupine's one goroutine per partition, so the counter needs no
// synchronization.
func boundedModel(deadline time.Time, maxSteps int, timedOut *bool) porcupine.Model {
	if deadline.IsZero() && maxSteps == 0 {
		return keyModel
	}
	m := keyModel
	steps, grown := 0, 0
	m.Step = func(state, input, output any) (bool, any) {
		if *timedOut {
			return false, state
		}
		steps++
		if (maxSteps > 0 && grown > maxSteps) ||
			(steps%256 == 0 && !deadline.IsZero() && !time.Now().Before(deadline)) {
			*timedOut = true
			return false, state
		}
		ok, next := keyModel.Step(state, input, output)
		if ok {
			grown++
		}
		return ok, next
	}
	return m
}
