package checker

import (
	"cmp"
	"slices"

	"github.com/idembench/idembench/history"
)

// epochs splits the ops of one key (g, sorted by Call) into the lives of
// its record when the record may have expired during the run (retention >
// 0 and the key's ops span more than retention after its first commit):
// a new execution after the record legitimately expired starts a new life,
// in which the key model starts afresh. It returns [g] when there is
// nothing to split. Lease ops are left out of a split (I7 and I8 look at
// the whole key).
//
// A life is a range of fencing tokens, since tokens keep increasing across
// expiry: life k+1 begins with the lowest token above life k's committer
// that is seen on an op called after the earliest moment life k's record
// could expire (the Call of its first committing op plus retention). A
// higher token seen earlier belongs to life k: a grant over a stored record
// before it could expire is a bug, not a new life. Ops are assigned so that
// an ambiguous op lands where it is legal when it can be:
//
//   - an op with a token (executions, effects, stored failures, released
//     and lost leases) belongs to the life of its token, so a stale
//     execution from before the expiry that is accepted later still counts
//     against its own life (a double execution);
//   - a replay (or a replayed failure) belongs to the life whose committed
//     response it returned, else to the life its Call falls in;
//   - in_progress and mismatch belong to the last life begun by their
//     Return (they are legal before a commit);
//   - an unknown call may have started any later life, so it is in the life
//     its Call falls in and in every later one;
//   - anything else, by Call.
func epochs(ops []history.Op, g []int32, retention int64) [][]int32 {
	if retention <= 0 || len(g) < 2 {
		return [][]int32{g}
	}
	first, last := int64(-1), ops[g[len(g)-1]].Call
	for _, i := range g {
		if commits(&ops[i]) {
			first = ops[i].Call
			break
		}
	}
	if first < 0 || last <= first+retention {
		return [][]int32{g}
	}
	lives := splitLives(ops, g, retention)
	if len(lives) == 1 {
		return [][]int32{g}
	}
	return assignLives(ops, g, lives)
}

// commits reports whether op stores the key's answer: an executed call, a
// failed call that ran, or the engine's completed or failed lease step (the
// store accepted the write). The lease step is the only evidence of a
// commit whose call's outcome is unknown (the client gave up on it, or its
// reply was lost after the write): without it, a key re-executed after that
// record's retention would look like a double execution.
func commits(op *history.Op) bool {
	switch op.Kind {
	case history.KindCall:
		return op.Outcome == history.Executed || (op.Outcome == history.Failed && op.Token != 0)
	case history.KindLease:
		return op.Token != 0 && (op.Transition == history.TransitionCompleted || op.Transition == history.TransitionFailed)
	}
	return false
}

// life is one life of a key's record: tokens from minToken on, begun (at
// the earliest) at start; committed is the Call of its first committing op
// (-1 while none), resp that op's response.
type life struct {
	minToken  uint64
	start     int64
	committed int64
	resp      string
}

// splitLives finds the lives of a key: see epochs.
func splitLives(ops []history.Op, g []int32, retention int64) []life {
	type tokInfo struct {
		tok       uint64
		lastCall  int64
		committed int64 // Call of its first committing op, or -1
		resp      string
	}
	idx := make(map[uint64]int)
	var toks []tokInfo
	for _, i := range g {
		op := &ops[i]
		if op.Token == 0 || op.Kind == history.KindFault {
			continue
		}
		j, ok := idx[op.Token]
		if !ok {
			j = len(toks)
			idx[op.Token] = j
			toks = append(toks, tokInfo{tok: op.Token, committed: -1})
		}
		t := &toks[j]
		t.lastCall = max(t.lastCall, op.Call)
		if commits(op) {
			if t.committed < 0 || op.Call < t.committed {
				t.committed = op.Call
			}
			if t.resp == "" && op.Kind == history.KindCall {
				t.resp = op.Resp
			}
		}
	}
	slices.SortFunc(toks, func(a, b tokInfo) int { return cmp.Compare(a.tok, b.tok) })
	lives := []life{{start: -1 << 63, committed: -1}}
	for _, t := range toks {
		cur := &lives[len(lives)-1]
		if cur.committed >= 0 && t.lastCall > cur.committed+retention {
			lives = append(lives, life{minToken: t.tok, start: cur.committed + retention, committed: -1})
			cur = &lives[len(lives)-1]
		}
		if t.committed >= 0 && cur.committed < 0 {
			cur.committed, cur.resp = t.committed, t.resp
		}
	}
	return lives
}

// assignLives distributes g over lives: see epochs.
func assignLives(ops []history.Op, g []int32, lives []life) [][]int32 {
	out := make([][]int32, len(lives))
	byToken := func(tok uint64) int {
		k, _ := slices.BinarySearchFunc(lives, tok, func(l life, t uint64) int {
			if l.minToken <= t {
				return -1
			}
			return 1
		})
		return k - 1
	}
	byTime := func(t int64) int {
		k, _ := slices.BinarySearchFunc(lives, t, func(l life, t int64) int {
			if l.start <= t {
				return -1
			}
			return 1
		})
		return max(k-1, 0)
	}
	for _, i := range g {
		op := &ops[i]
		switch {
		case op.Kind == history.KindLease:
			continue
		case op.Token != 0:
			k := byToken(op.Token)
			out[k] = append(out[k], i)
		case op.Outcome == history.Replayed || op.Outcome == history.Failed:
			k := slices.IndexFunc(lives, func(l life) bool { return l.committed >= 0 && l.resp != "" && l.resp == op.Resp })
			if k < 0 {
				k = byTime(op.Call)
			}
			out[k] = append(out[k], i)
		case op.Outcome == history.InProgress || op.Outcome == history.Mismatch:
			k := byTime(op.Return)
			out[k] = append(out[k], i)
		case op.Kind == history.KindCall && op.Outcome == history.Unknown:
			for k := byTime(op.Call); k < len(lives); k++ {
				out[k] = append(out[k], i)
			}
		default:
			k := byTime(op.Call)
			out[k] = append(out[k], i)
		}
	}
	return out // each life is a subsequence of g, so still sorted by Call
}
