package reports

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/idembench/idembench/history"
)

// synthSpec describes a synthetic open-loop run for tests and benchmarks.
type synthSpec struct {
	calls   int
	rate    float64 // intended calls per second, all clients together
	clients int
	seed    uint64
	// faults are windows [start, end) in seconds since the first call;
	// calls that overlap one are slower and fail more.
	faults [][2]float64
	// scale multiplies every latency; 0 means 1.
	scale float64
}

const synthBase = int64(1_000_000_000_000) // timeline ns of the first intended send

// synthHistory builds a deterministic history: calls at a fixed intended
// rate, lognormal latencies around 0.8 ms, a mix of outcomes, one effect per
// execution, and fault windows during which latency rises to tens of
// milliseconds and some calls stay unknown.
func synthHistory(sp synthSpec) *history.History {
	r := rand.New(rand.NewPCG(sp.seed, 1))
	h := &history.History{Header: history.Header{
		Format: history.Format, Version: history.FormatVersion, Tool: "idembench test",
		Scenario: "synthetic", Seed: int64(sp.seed), Backend: "memstore", Engine: "fenced+recovery",
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), LeaseTTL: 2 * time.Second,
	}}
	h.Ops = make([]history.Op, 0, sp.calls*2)
	inFault := func(t float64) bool {
		for _, f := range sp.faults {
			if t >= f[0] && t < f[1] {
				return true
			}
		}
		return false
	}
	interval := 1e9 / sp.rate
	for i := range sp.calls {
		intended := synthBase + int64(float64(i)*interval)
		t := float64(intended-synthBase) / 1e9
		call := intended + int64(r.IntN(20_000))
		lat := math.Exp(r.NormFloat64()*0.35) * 0.8e6
		fault := inFault(t)
		if fault {
			lat = math.Exp(r.NormFloat64()*0.6) * 25e6
		}
		if r.IntN(2000) == 0 {
			lat *= 20 // rare slow call
		}
		if sp.scale > 0 {
			lat *= sp.scale
		}
		// Keys get 4 attempts 2 s apart (blocks of 4 × keySpread calls), so
		// the history is linearizable: the first attempt executes, the others
		// replay. Busy keys (in_progress) and mismatches use keys of their own
		// that never commit.
		const keySpread = 4000
		key := (i/(4*keySpread))*keySpread + i%keySpread
		attempt := 1 + (i/keySpread)%4
		op := history.Op{
			Kind: history.KindCall, Client: i % sp.clients, Worker: i % sp.clients,
			Key: fmt.Sprintf("k%d", key), Request: int64(key), Attempt: attempt,
			Call: call, Return: call + int64(lat), Intended: intended,
		}
		permanent := key%100 == 0
		switch x := r.IntN(1000); {
		case attempt > 1 && (x < 15 || fault && x < 140):
			op.Key, op.Outcome = fmt.Sprintf("busy%d", i), history.InProgress
		case attempt > 1 && x < 20:
			op.Key, op.Outcome = fmt.Sprintf("other%d", i), history.Mismatch
		case attempt == 1:
			op.Token, op.Exec = uint64(i+1), fmt.Sprint("e", i)
			op.Outcome, op.Resp = history.Executed, "beef"
			if permanent {
				op.Outcome, op.Resp = history.Failed, "f00d"
			} else {
				h.Ops = append(h.Ops, history.Op{Kind: history.KindEffect, Client: op.Client, Worker: op.Worker,
					Key: op.Key, Call: call + int64(lat/3), Return: call + int64(lat/2), Token: op.Token, Exec: op.Exec, Applied: true})
			}
		case permanent:
			op.Outcome, op.Resp = history.Failed, "f00d"
		default:
			op.Outcome, op.Resp = history.Replayed, "beef"
		}
		if fault && x2(r) < 60 && op.Outcome != history.InProgress {
			op.Outcome, op.Return, op.Resp = history.Unknown, history.NoReturn, ""
		}
		h.Ops = append(h.Ops, op)
	}
	for i, f := range sp.faults {
		h.Ops = append(h.Ops, history.Op{Kind: history.KindFault, Client: -1, Worker: -1,
			Call: synthBase + int64(f[0]*1e9), Return: synthBase + int64(f[1]*1e9), Label: fmt.Sprintf("pause past lease #%d", i+1)})
	}
	history.SortByCall(h.Ops)
	return h
}

func x2(r *rand.Rand) int { return r.IntN(1000) }

// realisticSpec is a 20 s run at 2,000 calls/s with one 3 s fault window.
var realisticSpec = synthSpec{calls: 40_000, rate: 2000, clients: 32, seed: 7, faults: [][2]float64{{8, 11}}}
