package checker

import (
	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// maxWitnessOps bounds the greedy witness search, which is quadratic in the
// number of ops of a key; larger keys go straight to Porcupine.
const maxWitnessOps = 256

// findWitness looks for one linearization of ops (sorted by Call) without
// backtracking. Finding one proves the key linearizable; not finding one
// proves nothing, and the caller then runs Porcupine, which decides.
//
// At each step the candidates are the ops not yet placed whose Call is at
// or before the earliest Return among them (the real-time order allows any
// of them next, as Porcupine's closed intervals do). A legal candidate that
// leaves the state unchanged is always safe to place first: removing it
// from any linearization of the rest keeps that linearization valid. When
// only state-changing candidates are legal, the one that must end soonest
// (smallest Return) is placed; that is the guess that can be wrong.
func findWitness(ops []porcupine.Operation, sc *scratch) bool {
	n := len(ops)
	if n > maxWitnessOps {
		return false
	}
	done := sc.done[:0]
	for range n {
		done = append(done, false)
	}
	sc.done = done
	cur := append(sc.cur[:0], keyState{})
	tmp, best := sc.tmp, sc.best
	defer func() { sc.cur, sc.tmp, sc.best = cur, tmp, best }()
	first := 0 // every op before first is placed
	for placed := 0; placed < n; placed++ {
		for done[first] {
			first++
		}
		minRet := ops[first].Return
		for i := first + 1; i < n; i++ {
			if !done[i] && ops[i].Return < minRet {
				minRet = ops[i].Return
			}
		}
		pick, pickRet := -1, int64(0)
		for i := first; i < n && ops[i].Call <= minRet; i++ {
			if done[i] {
				continue
			}
			tmp = advance(tmp[:0], cur, ops[i].Input.(*history.Op))
			if len(tmp) == 0 {
				continue
			}
			if tmp.equal(cur) {
				pick, best = i, append(best[:0], tmp...)
				break
			}
			if pick < 0 || ops[i].Return < pickRet {
				pick, pickRet, best = i, ops[i].Return, append(best[:0], tmp...)
			}
		}
		if pick < 0 {
			return false
		}
		done[pick] = true
		cur = append(cur[:0], best...)
	}
	return true
}

// checkSequential steps the model through ops in order; it is exact when
// the ops are totally ordered in time.
func checkSequential(ops []porcupine.Operation, sc *scratch) bool {
	cur := append(sc.cur[:0], keyState{})
	tmp := sc.tmp
	defer func() { sc.cur, sc.tmp = cur, tmp }()
	for _, op := range ops {
		tmp = advance(tmp[:0], cur, op.Input.(*history.Op))
		if len(tmp) == 0 {
			return false
		}
		cur, tmp = tmp, cur
	}
	return true
}

// scratch holds one worker's reusable buffers, so that checking a key
// allocates nothing in the common case.
type scratch struct {
	pops           []porcupine.Operation
	done           []bool
	cur, tmp, best stateSet
	leases         leaseScratch
	bounds         bounds
}
