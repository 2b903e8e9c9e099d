package blackbox

import (
	"fmt"
	"strings"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// i4Bare is the checker's message of an I4 violation found by search, which
// names no answer; explainI4 says in words what contradicts what.
const i4Bare = "not linearizable against the key model"

// explainI4 rewrites the bare I4 messages of rep in words, as the I1
// messages are: the key, the two answers that contradict each other (their
// outcomes, responses and times from the run's start) and the number of
// effects the oracle counted.
func explainI4(h *history.History, rep *checker.Report) {
	var t0 int64
	for i := range h.Ops {
		if c := h.Ops[i].Call; c > 0 && (t0 == 0 || c < t0) {
			t0 = c
		}
	}
	for i := range rep.Violations {
		v := &rep.Violations[i]
		if v.Invariant == checker.I4Linearizable && v.Message == i4Bare {
			v.Message = i4Bare + ": " + i4Words(v.Ops, t0)
		}
	}
}

// i4Words describes the ops of an I4 violation.
func i4Words(refs []checker.OpRef, t0 int64) string {
	var calls []*history.Op
	applied, maybe := 0, 0
	for i := range refs {
		op := &refs[i].Op
		switch {
		case op.Kind == history.KindEffect && op.Outcome == history.Unknown:
			maybe++
		case op.Kind == history.KindEffect && op.Applied:
			applied++
		case op.Kind == history.KindCall:
			calls = append(calls, op)
		}
	}
	effects := fmt.Sprintf("the oracle counted %d applied effect(s)", applied)
	if maybe > 0 {
		effects += fmt.Sprintf(" and %d unresolved", maybe)
	}
	// The first two answers that cannot both be the key's one result.
	var first *history.Op
	for _, c := range calls {
		if !c.Outcome.HasResponse() && c.Outcome != history.Mismatch {
			continue
		}
		if first == nil {
			first = c
			continue
		}
		if c.Resp != first.Resp || c.Outcome != first.Outcome && !(c.Outcome.Success() && first.Outcome.Success()) {
			return fmt.Sprintf("%s contradicts %s; %s", callWords(c, t0), callWords(first, t0), effects)
		}
	}
	var ws []string
	for _, c := range calls[:min(4, len(calls))] {
		ws = append(ws, callWords(c, t0))
	}
	if len(calls) > 4 {
		ws = append(ws, fmt.Sprintf("%d more", len(calls)-4))
	}
	if len(ws) == 0 {
		return effects + ", with no call that explains them"
	}
	return fmt.Sprintf("no single execution explains %s; %s", strings.Join(ws, ", "), effects)
}

// callWords describes one call: who, when, what it got.
func callWords(op *history.Op, t0 int64) string {
	s := fmt.Sprintf("the %s answer to client %d (attempt %d, sent at %.1f ms", op.Outcome, op.Client, op.Attempt, ms(op.Call-t0))
	if op.Return != history.NoReturn {
		s += fmt.Sprintf(", returned at %.1f ms", ms(op.Return-t0))
	}
	s += ")"
	if op.Resp != "" {
		s += " with response " + op.Resp[:min(12, len(op.Resp))]
	}
	if op.Label != "" {
		s += " (" + op.Label + ")"
	}
	return s
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
