package checker

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// keyState is the state of one key in the sequential model: how many
// effects were applied (0 or 1) and what, if anything, was committed.
type keyState struct {
	effects   uint8
	committed bool
	// resp is the committed response digest; empty while committed is
	// false, and also when an Unknown call may have committed a response
	// nobody has seen yet (the first replay binds it).
	resp string
	// fp is the fingerprint id of the committing call, empty when unknown.
	fp string
}

func (s keyState) String() string {
	if !s.committed {
		return fmt.Sprintf("effects=%d committed=none", s.effects)
	}
	resp := s.resp
	if resp == "" {
		resp = "?"
	}
	return fmt.Sprintf("effects=%d committed=%s fp=%s", s.effects, short(resp), s.fp)
}

// respMatches reports whether a replay of resp/fp is consistent with s.
// An empty fingerprint on either side matches anything.
func (s keyState) respMatches(resp, fp string) bool {
	return (s.resp == "" || s.resp == resp) && (s.fp == "" || fp == "" || s.fp == fp)
}

// commit returns s with op's response committed.
func (s keyState) commit(op *history.Op) keyState {
	s.committed, s.resp, s.fp = true, op.Resp, op.FP
	return s
}

// step is the deterministic part of the key model (see the package doc for
// the rules). It returns whether op is legal in state s and the next state.
// Unknown ops are handled by steps, which branches.
func step(s keyState, op *history.Op) (bool, keyState) {
	if op.Kind == history.KindEffect {
		if !op.Applied {
			return true, s // rejected by the sink: no change
		}
		if s.effects != 0 || s.committed {
			// A second applied effect is a double execution; an effect
			// after the commit ran after the answer was given (after a
			// stored permanent failure: the client was told "failed").
			return false, s
		}
		s.effects = 1
		return true, s
	}
	switch op.Outcome {
	case history.Executed:
		if s.effects != 1 || s.committed {
			return false, s
		}
		return true, s.commit(op)
	case history.Failed:
		if !s.committed {
			return true, s.commit(op) // first execution stored a permanent failure
		}
		if op.Token != 0 || !s.respMatches(op.Resp, op.FP) {
			return false, s // a second execution, or a replay of another response
		}
		return true, s.bind(op)
	case history.Replayed:
		if !s.committed || !s.respMatches(op.Resp, op.FP) {
			return false, s
		}
		return true, s.bind(op)
	case history.InProgress:
		return !s.committed, s
	case history.Mismatch:
		// With a committed record and both fingerprints known, a mismatch
		// must have a different fingerprint. Without a commit the holder's
		// fingerprint is not modelled, so a mismatch is allowed.
		return !s.committed || s.fp == "" || op.FP == "" || s.fp != op.FP, s
	}
	return true, s // released, lease_lost, error: no change
}

// bind fills in the response of a commit made by an Unknown call, learned
// from the first replay.
func (s keyState) bind(op *history.Op) keyState {
	if s.resp == "" {
		s.resp = op.Resp
	}
	if s.fp == "" {
		s.fp = op.FP
	}
	return s
}

// advance appends to dst every state that op can lead to from a state of
// ss, and returns it; an empty result means op is illegal in every state of
// ss. Unknown calls may have done nothing, or, where nothing was committed,
// committed a response that a later replay reveals. Unresolved effects may
// have been applied (where none was) or not. dst must not share memory
// with ss.
func advance(dst, ss stateSet, op *history.Op) stateSet {
	for _, s := range ss {
		if op.Outcome != history.Unknown {
			if ok, t := step(s, op); ok {
				dst = dst.add(t)
			}
			continue
		}
		dst = dst.add(s)
		switch {
		case op.Kind == history.KindEffect && s.effects == 0 && !s.committed:
			t := s
			t.effects = 1
			dst = dst.add(t)
		case op.Kind == history.KindCall && !s.committed:
			t := s
			t.committed, t.resp, t.fp = true, "", op.FP
			dst = dst.add(t)
		}
	}
	return dst
}

// stateSet is a set of keyStates, the state of the model when unknown ops
// make it branch. It is small in practice (a handful of states), so it is a
// slice kept without duplicates.
type stateSet []keyState

func (ss stateSet) add(s keyState) stateSet {
	for _, t := range ss {
		if t == s {
			return ss
		}
	}
	return append(ss, s)
}

func (ss stateSet) equal(o stateSet) bool {
	if len(ss) != len(o) {
		return false
	}
	for _, s := range ss {
		found := false
		for _, t := range o {
			if s == t {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// noopOp is a model input that never changes the state: an op that cannot
// affect the verdict, kept only so visualizations show it.
type noopOp struct{ op *history.Op }

// keyModel is the porcupine model of one key: the state is a stateSet (a
// power-set construction of the nondeterministic model), the input is the
// *history.Op (or a noopOp) and the output is unused.
var keyModel = porcupine.Model{
	Init: func() any { return stateSet{{}} },
	Step: func(state, input, _ any) (bool, any) {
		op, ok := input.(*history.Op)
		if !ok {
			return true, state // noopOp
		}
		next := advance(nil, state.(stateSet), op)
		return len(next) > 0, next
	},
	Equal: func(a, b any) bool { return a.(stateSet).equal(b.(stateSet)) },
	Hash: func(state any) uint64 {
		var h uint64
		for _, s := range state.(stateSet) {
			h ^= hashState(s)
		}
		return h
	},
	DescribeOperation: func(input, _ any) string {
		if n, ok := input.(noopOp); ok {
			return describeOp(n.op) + " (no effect on the model)"
		}
		return describeOp(input.(*history.Op))
	},
	DescribeOperationMetadata: func(info any) string {
		if info == nil {
			return ""
		}
		return info.(string)
	},
	DescribeState: func(state any) string {
		ss := state.(stateSet)
		parts := make([]string, len(ss))
		for i, s := range ss {
			parts[i] = s.String()
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return "{" + strings.Join(parts, " | ") + "}"
	},
}

func hashState(s keyState) uint64 {
	h := uint64(14695981039346656037)
	mix := func(str string) {
		for i := 0; i < len(str); i++ {
			h ^= uint64(str[i])
			h *= 1099511628211
		}
		h ^= 0xff
		h *= 1099511628211
	}
	h ^= uint64(s.effects)<<1 | b2u(s.committed)
	h *= 1099511628211
	mix(s.resp)
	mix(s.fp)
	return h
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// describeOp renders an op for visualizations and messages.
func describeOp(op *history.Op) string {
	var b strings.Builder
	switch {
	case op.Kind == history.KindLease:
		fmt.Fprintf(&b, "lease %s token=%d", op.Transition, op.Token)
		if op.PrevToken != 0 {
			fmt.Fprintf(&b, " prev=%d", op.PrevToken)
		}
		if op.Label != "" {
			fmt.Fprintf(&b, " (%s)", op.Label)
		}
		return b.String()
	case op.Kind == history.KindEffect:
		fmt.Fprintf(&b, "effect token=%d", op.Token)
		switch {
		case op.Outcome == history.Unknown:
			b.WriteString(" ack lost (applied?)")
		case op.Applied:
			b.WriteString(" applied")
		default:
			b.WriteString(" rejected")
		}
	case op.Probe:
		fmt.Fprintf(&b, "probe -> %s", op.Outcome)
	default:
		fmt.Fprintf(&b, "do(fp=%s) -> %s", op.FP, op.Outcome)
	}
	if op.Resp != "" {
		fmt.Fprintf(&b, " resp=%s", short(op.Resp))
	}
	if op.Kind == history.KindCall && op.Token != 0 {
		fmt.Fprintf(&b, " token=%d", op.Token)
	}
	return b.String()
}

// short truncates a digest for display.
func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
