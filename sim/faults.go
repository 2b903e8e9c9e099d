package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// The fault kinds of the simulation, by their history names.
const (
	faultCrash     = history.FaultCrash
	faultPause     = history.FaultPause
	faultLostReply = history.FaultDropReplies
	faultClockSkew = history.FaultClockSkew
)

// plan is what the seed decided for one attempt before it starts.
type plan struct {
	crashAt  idem.Point    // 0: no crash
	pauseAt  idem.Point    // 0: no pause
	pause    time.Duration // how long
	loseStep int           // the store call (1 = Acquire) whose reply is lost; 0: none
	loseReq  bool          // that call's request is lost instead: it never reaches the store
	// ambiguous: the provider's answer to the business call is lost
	// (0: no; 1: after the effect applied; 2: before it reached the
	// provider, no effect).
	ambiguous int
	// rtStall holds round trip rtStallAt (1 or 2) of the outcome write
	// (store call 2) for rtStall before it is sent.
	rtStall   time.Duration
	rtStallAt int
	beatLag   time.Duration // stall of the execution's first renewal before it is sent
	work      time.Duration
	fail      int // 0 ok, 1 retryable, 2 permanent
}

// drawPlan draws an attempt's faults and business outcome from rng.
func (w *world) drawPlan(rng *rand.Rand) *plan {
	c, f := &w.cfg, &w.cfg.Faults
	p := &plan{work: time.Duration(rng.ExpFloat64() * float64(c.Work))}
	if rng.Float64() < c.LongWork {
		p.work = c.LeaseTTL + time.Duration(rng.Int64N(int64(2*c.LeaseTTL)))
	}
	switch u := rng.Float64(); {
	case u < c.RetryableRate:
		p.fail = 1
	case u < c.RetryableRate+c.PermanentRate:
		p.fail = 2
	}
	if rng.Float64() < f.Crash {
		p.crashAt = idem.Point(1 + rng.IntN(4))
	}
	if rng.Float64() < f.Pause {
		p.pauseAt = idem.PointBeforeFn
		if rng.IntN(2) == 1 {
			p.pauseAt = idem.PointAfterFn
		}
		p.pause = f.PauseMin
		if f.PauseMax > f.PauseMin {
			p.pause += time.Duration(rng.Int64N(int64(f.PauseMax - f.PauseMin)))
		}
		if rng.IntN(2) == 1 {
			// A process that stalled often comes back to errors (its
			// connections timed out): the function fails, retryably.
			p.fail = 1
		}
	}
	if rng.Float64() < f.SlowRenewal {
		p.beatLag = c.LeaseTTL/2 + time.Duration(rng.Int64N(int64(c.LeaseTTL)))
	}
	if rng.Float64() < f.LostReply {
		// The Acquire (step 1) or the write that records the outcome
		// (step 2; an attempt that replays makes no second call).
		p.loseStep = 1 + rng.IntN(2)
		p.loseReq = rng.Float64() < f.LostRequest
	}
	if rng.Float64() < f.Uncertain {
		p.ambiguous = 1 + rng.IntN(2)
	}
	if rng.Float64() < f.RoundTripStall {
		p.rtStall = c.LeaseTTL/2 + time.Duration(rng.Int64N(int64(c.LeaseTTL)))
		p.rtStallAt = 1 + rng.IntN(2)
	}
	return p
}

// hook is every engine's fault hook: it crashes or pauses the attempt at
// the points its plan names.
func (w *world) hook(ctx context.Context, p idem.Point, l idem.Lease) error {
	a := actorOf(ctx)
	if a == nil || a.plan == nil {
		return nil
	}
	if a.plan.crashAt == p {
		w.fault(faultCrash, a, "crash "+p.String(), 0)
		return fmt.Errorf("sim: crash at %s", p)
	}
	if a.plan.pauseAt == p {
		w.fault(faultPause, a, "pause "+p.String(), a.plan.pause)
		time.Sleep(a.plan.pause)
		w.sch.park(a.id, a.seq, "resume")
	}
	return nil
}

// fault records a fault window of d (0: an instant) that hit actor a.
func (w *world) fault(kind history.FaultKind, a *actor, label string, d time.Duration) {
	now := w.now()
	op := history.Fault(kind, label, now, now+int64(d))
	op.Client, op.Worker, op.Key = a.client, a.worker, a.key
	w.faults.Add(1)
	w.record(op)
}

// skewClock is an app server's clock: true (virtual) time plus offset.
type skewClock struct{ offset time.Duration }

func (c skewClock) Now() time.Time { return time.Now().Add(c.offset) }
