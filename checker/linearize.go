package checker

import (
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// linStatus is the I4 outcome for one key.
type linStatus uint8

const (
	linOK        linStatus = iota
	linIllegal             // not linearizable
	linUnknown             // Porcupine timed out
	linSkipped             // the budget ran out before the key was started
	linImplied             // not linearizable, implied by I1 or I3 without a search
	linUnchecked           // nothing to check (no ops left after filtering)
)

// modelOps returns the ops of one key that can change the model's verdict,
// as porcupine operations. Left out, because no linearization can depend on
// them: calls that released, lost their lease or failed locally, effects the
// sink rejected, Unknown calls when some call committed (only one commit is
// legal, so they must have done nothing), and unresolved effects when an
// effect is known to be applied (a second one would be illegal anyway).
// Unknown calls and unresolved effects get Return = NoReturn. The second
// result reports whether the ops are totally ordered in time (each returns
// before the next is called), so only one order is possible.
func modelOps(ops []history.Op, g []int32, f keyFacts) ([]porcupine.Operation, bool) {
	out := make([]porcupine.Operation, 0, len(g))
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

// checkSequential steps the model through ops in order; it is exact when
// the ops are totally ordered in time.
func checkSequential(ops []porcupine.Operation) bool {
	state := keyModel.Init()
	for _, op := range ops {
		ok, next := keyModel.Step(state, op.Input, nil)
		if !ok {
			return false
		}
		state = next
	}
	return true
}

// linearize decides I4 for one key. deadline bounds Porcupine's search; the
// zero time means no bound.
func linearize(ops []history.Op, g []int32, f keyFacts, deadline time.Time) (status linStatus, searched bool) {
	if f.impliesI4 {
		return linImplied, false
	}
	pops, sequential := modelOps(ops, g, f)
	switch {
	case len(pops) == 0:
		return linUnchecked, false
	case sequential:
		if checkSequential(pops) {
			return linOK, false
		}
		return linIllegal, false
	}
	var timeout time.Duration
	if !deadline.IsZero() {
		timeout = time.Until(deadline)
		if timeout <= 0 {
			return linSkipped, true
		}
	}
	switch porcupine.CheckOperationsTimeout(keyModel, pops, timeout) {
	case porcupine.Ok:
		return linOK, true
	case porcupine.Illegal:
		return linIllegal, true
	}
	return linUnknown, true
}
