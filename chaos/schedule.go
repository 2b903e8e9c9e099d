package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/idembench/idembench/history"
)

// ProcessPause is one SIGSTOP of a worker process: Worker stops at At
// (from the start of traffic) for For, then continues.
type ProcessPause struct {
	At, For time.Duration
	Worker  int
}

// ProcessPauses turns the Pause faults of a schedule into the SIGSTOPs of
// a run with workers worker processes and runFor of traffic. Each pause
// (Count of them per fault, at least one) stops a seeded worker at a seeded
// offset in [Start, End) for Duration; a pause that would outlast the
// traffic is left out (the liveness probe needs every worker). Crash faults
// are ignored. The same seed gives the same schedule; the result is sorted
// by nothing but the order of the faults.
func ProcessPauses(seed int64, faults []Fault, workers int, runFor time.Duration) []ProcessPause {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5349475354)) // "SIGST"
	var ps []ProcessPause
	for _, f := range faults {
		if f.Kind != history.FaultPause {
			continue
		}
		for range max(f.Count, 1) {
			span := int64(max(f.End-f.Start, 1))
			p := ProcessPause{At: f.Start + time.Duration(rng.Int64N(span)), For: f.Duration, Worker: rng.IntN(max(workers, 1))}
			if p.At+p.For <= runFor {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// ProcessCrashes turns the Crash faults of a schedule into one crash per
// worker incarnation, in order: a fault with Count n crashes n
// incarnations (at least one). Pause faults are ignored.
func ProcessCrashes(faults []Fault) []Fault {
	var out []Fault
	for _, f := range faults {
		if f.Kind != history.FaultCrash {
			continue
		}
		for range max(f.Count, 1) {
			out = append(out, f)
		}
	}
	return out
}
