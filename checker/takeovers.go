package checker

import (
	"fmt"

	"github.com/idembench/idembench/history"
)

// takeoverTwice returns the first pair of take-overs among grants (sorted
// by Call) that report the same previous token, and the ops that show it,
// or "". Part of I7: an atomic take-over replaces the lease it read in the
// same step, so a token can be superseded once. Two take-overs of one token
// mean both read the same expired lease and both wrote: a take-over done
// in two steps. Unlike I7's other rules this one needs no real-time order:
// it holds for overlapping take-overs too, which is exactly when a
// non-atomic take-over shows.
func takeoverTwice(ops []history.Op, grants []int32) (string, []int32) {
	var seen map[uint64]int32 // previous token -> the first take-over of it
	for _, i := range grants {
		op := &ops[i]
		if op.Transition != history.TransitionTakenOver || op.PrevToken == 0 {
			continue
		}
		if seen == nil {
			seen = make(map[uint64]int32)
		}
		j, dup := seen[op.PrevToken]
		if !dup {
			seen[op.PrevToken] = i
			continue
		}
		return fmt.Sprintf("two take-overs of token %d: token %d (called at %d) and token %d (called at %d); an atomic take-over supersedes a lease once",
			op.PrevToken, ops[j].Token, ops[j].Call, op.Token, op.Call), []int32{j, i}
	}
	return "", nil
}
