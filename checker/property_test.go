package checker

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// TestGeneratedLegalHistoriesPass checks synthetic legal histories (what a
// correct engine with a fenced sink and recovery produces) for several
// seeds and shares of unknown outcomes.
func TestGeneratedLegalHistoriesPass(t *testing.T) {
	for seed := range uint64(4) {
		for _, unk := range []float64{0, 0.3, 1} {
			h := genHistory(seed, genOptions{ops: 4000, keys: 400, unknownPct: unk})
			rep := Check(h, Options{})
			if rep.Verdict != VerdictOK {
				t.Fatalf("seed %d unknown %.1f: verdict %s:%s", seed, unk, rep.Verdict, summarize(rep))
			}
			if got := rep.Result(I4Linearizable).Checked; got != 400 {
				t.Errorf("I4 checked %d keys, want 400", got)
			}
		}
	}
}

// TestMutatedHistoriesFail breaks one key of a legal history in each of
// the ways docs/design/verification.md names and checks that the checker finds it,
// under the expected invariant, on that key only.
func TestMutatedHistoriesFail(t *testing.T) {
	lastReturn := func(h *history.History, key string) int64 {
		var m int64
		for _, op := range h.Ops {
			if op.Key == key && op.Return != history.NoReturn {
				m = max(m, op.Return, op.Call)
			}
		}
		return m
	}
	isApplied := func(op *history.Op) bool { return op.Kind == history.KindEffect && op.Applied }
	tests := []struct {
		name   string
		mutate func(h *history.History, key string) bool // false: key unsuitable
		want   Invariant
	}{
		{"second applied effect", func(h *history.History, key string) bool {
			t := lastReturn(h, key) + 10
			h.Ops = append(h.Ops, history.Op{Kind: history.KindEffect, Key: key, Call: t, Return: t + 5, Token: 1 << 40, Applied: true})
			return true
		}, I1AtMostOnce},
		{"replay of another response", func(h *history.History, key string) bool {
			op := lastReplay(h, key)
			if op == nil {
				return false
			}
			op.Resp = "deadbeef"
			return true
		}, I3ReplayConsistency},
		{"success without effect", func(h *history.History, key string) bool {
			for _, i := range keyOps(h, key, isApplied) {
				h.Ops[i].Applied = false
			}
			return true
		}, I2NoPhantomSuccess},
		{"in_progress after commit", func(h *history.History, key string) bool {
			op := lastReplay(h, key)
			if op == nil {
				return false
			}
			op.Outcome, op.Resp = history.InProgress, ""
			return true
		}, I4Linearizable},
		{"second execution with the same response", func(h *history.History, key string) bool {
			op := lastReplay(h, key)
			if op == nil {
				return false
			}
			op.Outcome, op.Token = history.Executed, 1<<41
			return true
		}, I4Linearizable},
		{"stale token accepted", func(h *history.History, key string) bool {
			if len(keyOps(h, key, func(op *history.Op) bool { return op.Token == 1 })) > 0 {
				return false // token 1 is this key's own: not stale
			}
			t := lastReturn(h, key) + 10
			h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Key: key, FP: "x", Call: t, Return: t + 5,
				Outcome: history.LeaseLost, Token: 1})
			h.Ops = append(h.Ops, history.Op{Kind: history.KindEffect, Key: key, Call: t + 1, Return: t + 2, Token: 1, Applied: true})
			return true
		}, I5Fencing},
		{"token restart after the record was gone", func(h *history.History, key string) bool {
			t := lastReturn(h, key) + 10
			h.Ops = append(h.Ops, history.Op{Kind: history.KindLease, Key: key, Call: t, Return: t + 5, Token: 1,
				Transition: history.TransitionAcquired})
			return true
		}, I7TokenOrder},
		{"take-over of a superseded lease", func(h *history.History, key string) bool {
			grant := lastTakeover(h, key)
			if grant == nil {
				return false
			}
			t := lastReturn(h, key) + 10
			h.Ops = append(h.Ops, history.Op{Kind: history.KindLease, Key: key, Call: t, Return: t + 5, Token: 1 << 42,
				PrevToken: grant.PrevToken, Transition: history.TransitionTakenOver})
			return true
		}, I7TokenOrder},
		{"unfenced heartbeat after a take-over", func(h *history.History, key string) bool {
			grant := lastTakeover(h, key)
			if grant == nil {
				return false
			}
			t := grant.Return + 1
			h.Ops = append(h.Ops, history.Op{Kind: history.KindLease, Key: key, Call: t, Return: t + 5, Token: grant.PrevToken,
				Transition: history.TransitionHeartbeat})
			return true
		}, I8NoSupersededWrite},
		{"stuck probe", func(h *history.History, key string) bool {
			t := lastReturn(h, key) + 10
			h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Key: key, Call: t, Return: t + 5, Outcome: history.Unknown, Probe: true})
			return true
		}, I6Liveness},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			tried := 0
			for seed := range uint64(20) {
				h := genHistory(seed, genOptions{ops: 2000, keys: 200, unknownPct: 0.3})
				// Up to 10 random keys: some mutations need a key with a take-over.
				key, ok := "", false
				for range 10 {
					if key = h.Ops[rng.IntN(len(h.Ops))].Key; tt.mutate(h, key) {
						ok = true
						break
					}
				}
				if !ok {
					continue
				}
				tried++
				rep := Check(h, Options{})
				if rep.Verdict != VerdictViolation || !slices.Contains(rep.Violated(), tt.want) {
					t.Fatalf("seed %d key %s: verdict %s, violated %v, want %s:%s", seed, key, rep.Verdict, rep.Violated(), tt.want, summarize(rep))
				}
				for _, v := range rep.Violations {
					if v.Key != key {
						t.Errorf("seed %d: violation on untouched key %s: %s %s", seed, v.Key, v.Invariant, v.Message)
					}
				}
			}
			if tried < 5 {
				t.Fatalf("mutation applied to only %d histories", tried)
			}
		})
	}
}

// TestWitnessAgreesWithPorcupine generates small random (mostly illegal)
// key histories and checks the fast paths against Porcupine: a witness
// found means Porcupine says Ok, and for totally ordered ops the direct
// check gives Porcupine's answer. It also checks that the witness is found
// for most legal ones, or the fast path would be useless.
func TestWitnessAgreesWithPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	outcomes := []history.Outcome{history.Executed, history.Replayed, history.Failed, history.InProgress,
		history.Mismatch, history.Unknown, history.Released}
	var sc scratch
	legal, witnessed := 0, 0
	for iter := range 20000 {
		n := 2 + rng.IntN(7)
		var ops []history.Op
		for range n {
			call := int64(rng.IntN(40))
			op := history.Op{Kind: history.KindCall, Key: "k", Call: call, Return: call + int64(rng.IntN(15)),
				FP: []string{"a", "b"}[rng.IntN(2)]}
			if rng.IntN(3) == 0 {
				op.Kind = history.KindEffect
				op.Applied = rng.IntN(4) != 0
				if rng.IntN(4) == 0 {
					op.Outcome = history.Unknown
				}
			} else {
				op.Outcome = outcomes[rng.IntN(len(outcomes))]
				if op.Outcome.HasResponse() {
					op.Resp = []string{"r1", "r2"}[rng.IntN(2)]
				}
				if op.Outcome == history.Executed || (op.Outcome == history.Failed && rng.IntN(2) == 0) {
					op.Token = uint64(1 + rng.IntN(3))
				}
			}
			ops = append(ops, op)
		}
		history.SortByCall(ops)
		g, f := ledgerOf(ops)
		pops, sequential := modelOps(nil, ops, g, f)
		// Porcupine on every op, unfiltered, is the reference.
		all := make([]porcupine.Operation, len(ops))
		for i := range ops {
			ret := ops[i].Return
			if ops[i].Outcome == history.Unknown {
				ret = history.NoReturn
			}
			all[i] = porcupine.Operation{Input: &ops[i], Call: ops[i].Call, Return: ret}
		}
		want := porcupine.CheckOperations(keyModel, all)
		if got := porcupine.CheckOperations(keyModel, pops); got != want {
			t.Fatalf("iter %d: filtering ops changed Porcupine's answer from %v to %v:\n%v", iter, want, got, ops)
		}
		if findWitness(pops, &sc) && !want {
			t.Fatalf("iter %d: witness found for a non-linearizable key:\n%v", iter, ops)
		}
		if sequential && checkSequential(pops, &sc) != want {
			t.Fatalf("iter %d: sequential check disagrees with Porcupine (%v):\n%v", iter, want, ops)
		}
		if f.impliesI4 && want {
			t.Fatalf("iter %d: %s reported as implying I4, but Porcupine finds it linearizable:\n%v", iter, f.impliedWhy, ops)
		}
		if want {
			legal++
			if findWitness(pops, &sc) {
				witnessed++
			}
		}
	}
	t.Logf("%d legal of 20000, witness found for %d", legal, witnessed)
	if legal < 500 || witnessed*10 < legal*9 {
		t.Errorf("witness found for %d of %d legal keys; want at least 90%%", witnessed, legal)
	}
}

// randomKeyOps draws one small random key history (mostly illegal): calls
// of every outcome, applied, rejected and unresolved effects, unknown
// outcomes, two fingerprints and two responses, overlapping at random.
// With emptyFP some calls carry no fingerprint.
func randomKeyOps(rng *rand.Rand, emptyFP bool) []history.Op {
	outcomes := []history.Outcome{history.Executed, history.Replayed, history.Replayed, history.Failed,
		history.InProgress, history.InProgress, history.Mismatch, history.Unknown, history.Unknown, history.Released}
	fps := []string{"a", "a", "b"}
	if emptyFP {
		fps = append(fps, "")
	}
	n := 1 + rng.IntN(9)
	ops := make([]history.Op, 0, n)
	for range n {
		call := int64(rng.IntN(50))
		op := history.Op{Kind: history.KindCall, Key: "k", Call: call, Return: call + int64(rng.IntN(20)),
			FP: fps[rng.IntN(len(fps))]}
		if rng.IntN(4) == 0 {
			op.Kind, op.FP = history.KindEffect, ""
			op.Applied = rng.IntN(3) != 0
			if rng.IntN(3) == 0 {
				op.Outcome, op.Applied, op.Return = history.Unknown, false, history.NoReturn
			}
		} else {
			op.Outcome = outcomes[rng.IntN(len(outcomes))]
			if op.Outcome.HasResponse() {
				op.Resp = []string{"r1", "r1", "r1", "r2"}[rng.IntN(4)]
			}
			if op.Outcome == history.Executed || (op.Outcome == history.Failed && rng.IntN(2) == 0) {
				op.Token = uint64(1 + rng.IntN(3))
			}
			if op.Outcome == history.Unknown {
				op.Return = history.NoReturn
			}
		}
		ops = append(ops, op)
	}
	history.SortByCall(ops)
	return ops
}

// TestDecideAgreesWithPorcupine cross-checks the decision procedure against
// Porcupine on 30,000 random small key histories, unknown outcomes and
// unresolved effects included: on the ops as recorded and on the filtered
// model ops, decide must give Porcupine's answer whenever it answers, and
// it must answer whenever every call carries a fingerprint.
func TestDecideAgreesWithPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	var legal, illegal, answered, total int
	var b bounds // reused, as Check reuses it
	for iter := range 30000 {
		emptyFP := iter%5 == 0
		ops := randomKeyOps(rng, emptyFP)
		all := make([]porcupine.Operation, len(ops))
		for i := range ops {
			all[i] = porcupine.Operation{Input: &ops[i], Call: ops[i].Call, Return: ops[i].Return}
		}
		want := porcupine.CheckOperations(keyModel, all)
		g, f := ledgerOf(ops)
		pops, _ := modelOps(nil, ops, g, f)
		for _, in := range [][]porcupine.Operation{all, pops} {
			total++
			got, ok := decide(in, &b)
			if !ok {
				if !emptyFP {
					t.Fatalf("iter %d: decide declined a history whose calls all carry a fingerprint:\n%v", iter, ops)
				}
				continue
			}
			answered++
			if got != want {
				t.Fatalf("iter %d: decide says %v, Porcupine %v:\n%v", iter, got, want, ops)
			}
		}
		if want {
			legal++
		} else {
			illegal++
		}
	}
	t.Logf("%d legal, %d illegal; decide answered %d of %d", legal, illegal, answered, total)
	if legal < 3000 || illegal < 3000 {
		t.Errorf("generator too one-sided: %d legal, %d illegal", legal, illegal)
	}
}

// keyOps returns the indexes of key's ops in h for which pred holds.
func keyOps(h *history.History, key string, pred func(*history.Op) bool) []int {
	var out []int
	for i := range h.Ops {
		if h.Ops[i].Key == key && pred(&h.Ops[i]) {
			out = append(out, i)
		}
	}
	return out
}

func isReplay(op *history.Op) bool { return op.Outcome == history.Replayed }

// lastReplay returns key's last replayed call in h, or nil.
func lastReplay(h *history.History, key string) *history.Op {
	r := keyOps(h, key, isReplay)
	if len(r) == 0 {
		return nil
	}
	return &h.Ops[r[len(r)-1]]
}

// lastTakeover returns key's last take-over grant in h, or nil.
func lastTakeover(h *history.History, key string) *history.Op {
	var grant *history.Op
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Key == key && op.Kind == history.KindLease && op.Transition == history.TransitionTakenOver {
			grant = op
		}
	}
	return grant
}

// ledgerOf checks the ledger of ops, all of key "k", as one group, and
// returns the group and checkLedger's answer.
func ledgerOf(ops []history.Op) ([]int32, keyFacts) {
	g := make([]int32, len(ops))
	for i := range g {
		g[i] = int32(i)
	}
	var r keyResult
	return g, checkLedger(ops, "k", g, &r, true)
}
