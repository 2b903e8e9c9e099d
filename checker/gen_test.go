package checker

import (
	"fmt"
	"math/rand/v2"

	"github.com/idembench/idembench/history"
)

// genOptions shapes a synthetic legal history.
type genOptions struct {
	ops        int     // total ops, at least opsPerKey
	keys       int     // distinct keys
	unknownPct float64 // share of keys whose first attempt ends unknown (crash or timeout)
	clients    int
}

// genHistory builds a legal history the way a correct engine with a fenced
// sink and recovery would produce it: per key one execution with one
// applied effect, its lease grant (and take-over) and completion,
// concurrent duplicates answered in_progress while it runs,
// replays after it, some mismatches and timed-out replays, and for a share of
// keys a first attempt with an unknown outcome (crashed before the effect,
// or after it and completed by a recovering successor). Ops are spread over
// the keys as evenly as possible and sorted by Call.
func genHistory(seed uint64, o genOptions) *history.History {
	rng := rand.New(rand.NewPCG(seed, 0))
	if o.clients == 0 {
		o.clients = 64
	}
	h := &history.History{Header: history.Header{Format: history.Format, Version: history.FormatVersion,
		Scenario: "synthetic", Seed: int64(seed)}}
	h.Ops = make([]history.Op, 0, o.ops)
	var token uint64
	per, extra := o.ops/o.keys, o.ops%o.keys
	for k := range o.keys {
		n := per
		if k < extra {
			n++
		}
		token++
		genKey(rng, &h.Ops, k, n, &token, o)
	}
	history.SortByCall(h.Ops)
	return h
}

func genKey(rng *rand.Rand, ops *[]history.Op, k, n int, token *uint64, o genOptions) {
	key := fmt.Sprintf("key-%d", k)
	fp := fmt.Sprintf("fp%d", k)
	resp := fmt.Sprintf("%016x", rng.Uint64())
	client := func() int { return rng.IntN(o.clients) }
	left := n
	emit := func(op history.Op) {
		if left > 0 {
			op.Key = key
			*ops = append(*ops, op)
			left--
		}
	}
	t := int64(rng.IntN(60e9)) + 1e9 // start somewhere in a minute-long run
	const ms = int64(1e6)

	execClient := client()
	if rng.Float64() < o.unknownPct && left >= 7 {
		// A first attempt whose outcome is unknown.
		tok := *token
		*token++
		emit(history.Op{Kind: history.KindCall, Client: execClient, FP: fp, Call: t, Return: history.NoReturn,
			Outcome: history.Unknown, Err: "worker crashed"})
		emit(history.Op{Kind: history.KindLease, Client: execClient, Call: t, Return: t + ms/2, Token: tok,
			Transition: history.TransitionAcquired})
		applied := rng.IntN(2) == 0 // crashed after the effect: recovery reuses it
		emit(history.Op{Kind: history.KindEffect, Client: execClient, Call: t + ms, Return: t + 2*ms, Token: tok, Applied: applied})
		t += 500 * ms // lease TTL later, a retry takes over
		tok2 := *token
		emit(history.Op{Kind: history.KindCall, Client: execClient, FP: fp, Call: t, Return: t + 10*ms,
			Outcome: history.Executed, Token: tok2, Resp: resp})
		emit(history.Op{Kind: history.KindLease, Client: execClient, Call: t, Return: t + ms/2, Token: tok2, PrevToken: tok,
			Transition: history.TransitionTakenOver})
		if !applied {
			emit(history.Op{Kind: history.KindEffect, Client: execClient, Call: t + 2*ms, Return: t + 5*ms, Token: tok2, Applied: true})
		}
		emit(history.Op{Kind: history.KindLease, Client: execClient, Call: t + 6*ms, Return: t + 9*ms, Token: tok2,
			Transition: history.TransitionCompleted})
	} else {
		// The execution [t, t+10ms] with its grant, effect and completion inside.
		emit(history.Op{Kind: history.KindCall, Client: execClient, FP: fp, Call: t, Return: t + 10*ms,
			Outcome: history.Executed, Token: *token, Resp: resp})
		emit(history.Op{Kind: history.KindLease, Client: execClient, Call: t, Return: t + ms/2, Token: *token,
			Transition: history.TransitionAcquired})
		emit(history.Op{Kind: history.KindEffect, Client: execClient, Call: t + 2*ms, Return: t + 5*ms, Token: *token, Applied: true})
		emit(history.Op{Kind: history.KindLease, Client: execClient, Call: t + 6*ms, Return: t + 9*ms, Token: *token,
			Transition: history.TransitionCompleted})
	}
	// Concurrent duplicates while it runs.
	for i := 0; i < 2 && left > 0 && rng.IntN(2) == 0; i++ {
		c := t + int64(rng.IntN(9))*ms
		emit(history.Op{Kind: history.KindCall, Client: client(), FP: fp, Call: c, Return: c + ms/2, Outcome: history.InProgress})
	}
	// Replays (some overlapping each other), a few mismatches and timeouts.
	c := t + 11*ms
	for left > 0 {
		d := int64(rng.IntN(3)+1) * ms
		switch r := rng.IntN(20); {
		case r == 0:
			emit(history.Op{Kind: history.KindCall, Client: client(), FP: fp + "x", Call: c, Return: c + d, Outcome: history.Mismatch})
		case r == 1:
			emit(history.Op{Kind: history.KindCall, Client: client(), FP: fp, Call: c, Return: history.NoReturn,
				Outcome: history.Unknown, Err: "client timeout"})
		default:
			emit(history.Op{Kind: history.KindCall, Client: client(), FP: fp, Call: c, Return: c + d, Outcome: history.Replayed, Resp: resp})
		}
		c += int64(rng.IntN(2)) * ms // sometimes the next one overlaps
	}
}
