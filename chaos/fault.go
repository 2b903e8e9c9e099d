package chaos

import (
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/idem"
)

// Kind is the kind of an in-process fault.
type Kind string

// The in-process fault kinds.
const (
	// Crash aborts the execution at Point; its lease stays.
	Crash Kind = "crash"
	// Pause stalls the execution at Point for Duration, then resumes it.
	Pause Kind = "pause"
)

// Fault is one entry of a fault schedule.
type Fault struct {
	// Kind is Crash or Pause.
	Kind Kind
	// Point is where the fault hits. Zero means idem.PointBeforeFn. A pause
	// must be at PointAfterAcquire or PointBeforeFn: only there is no
	// heartbeat running, so only there does it model a holder stalled past
	// its lease.
	Point idem.Point
	// Count is how many executions the fault hits, armed at seeded offsets
	// spread over [Start, End). Exactly one of Count and Probability is set.
	Count int
	// Probability is the chance, in (0, 1], that an execution reaching
	// Point in [Start, End) is hit.
	Probability float64
	// Start and End bound the window of the run, measured from its start, in
	// which the fault is armed. End zero means the end of the run's traffic.
	Start, End time.Duration
	// Duration is how long a Pause stalls. It must be positive for a pause
	// and zero for a crash. To model a holder paused past its lease it must
	// be longer than the lease TTL; the scenario decides.
	Duration time.Duration
	// ThenFail makes a paused execution fail with ErrInjected (a retryable
	// error, so the engine releases the key) once it resumes, instead of
	// running its side effect. Pause only.
	ThenFail bool
}

// Errors returned by injected faults.
var (
	// ErrCrash is the error a crash hook returns; Do wraps it in
	// idem.ErrAborted.
	ErrCrash = errors.New("chaos: injected crash")
	// ErrInjected is the retryable business error of a paused execution
	// with ThenFail.
	ErrInjected = errors.New("chaos: injected failure after pause")
)

// ParsePoint parses a point name as written by idem.Point.String
// ("after-acquire", "before-fn", "after-fn", "after-complete"). The aliases
// "before-effect", "after-effect" and "before-reply" name the same points as
// before-fn, after-fn and after-complete.
func ParsePoint(s string) (idem.Point, error) {
	switch s {
	case "after-acquire":
		return idem.PointAfterAcquire, nil
	case "before-fn", "before-effect":
		return idem.PointBeforeFn, nil
	case "after-fn", "after-effect":
		return idem.PointAfterFn, nil
	case "after-complete", "before-reply":
		return idem.PointAfterComplete, nil
	}
	return 0, fmt.Errorf("chaos: unknown point %q (want after-acquire, before-fn, after-fn or after-complete)", s)
}

// Validate reports the first rule f breaks, or nil. runFor is the length of
// the run's traffic, against which Start and End are checked; zero skips
// that check.
func (f *Fault) Validate(runFor time.Duration) error {
	point := f.Point
	if point == 0 {
		point = idem.PointBeforeFn
	}
	switch f.Kind {
	case Crash:
		if f.Duration != 0 || f.ThenFail {
			return fmt.Errorf("chaos: crash fault takes no duration or then_fail")
		}
		if point < idem.PointAfterAcquire || point > idem.PointAfterComplete {
			return fmt.Errorf("chaos: crash at invalid point %d", point)
		}
	case Pause:
		if f.Duration <= 0 {
			return fmt.Errorf("chaos: pause fault needs a positive duration")
		}
		if point != idem.PointAfterAcquire && point != idem.PointBeforeFn {
			return fmt.Errorf("chaos: pause at %s: a pause must be at after-acquire or before-fn, where no heartbeat runs", point)
		}
	default:
		return fmt.Errorf("chaos: unknown fault kind %q (want crash or pause)", f.Kind)
	}
	switch {
	case f.Count < 0:
		return fmt.Errorf("chaos: negative count %d", f.Count)
	case f.Probability < 0 || f.Probability > 1:
		return fmt.Errorf("chaos: probability %g outside [0, 1]", f.Probability)
	case (f.Count > 0) == (f.Probability > 0):
		return fmt.Errorf("chaos: %s fault needs exactly one of count and probability", f.Kind)
	case f.Start < 0 || f.End < 0:
		return fmt.Errorf("chaos: negative window start or end")
	case f.End != 0 && f.End <= f.Start:
		return fmt.Errorf("chaos: window end %s not after start %s", f.End, f.Start)
	case runFor > 0 && f.Start >= runFor:
		return fmt.Errorf("chaos: window start %s not before the end of the run (%s)", f.Start, runFor)
	}
	return nil
}

// label describes an injection for the history.
func (f *Fault) label(p idem.Point) string {
	switch f.Kind {
	case Pause:
		s := fmt.Sprintf("pause %s at %s", f.Duration, p)
		if f.ThenFail {
			s += " then fail"
		}
		return s
	default:
		return fmt.Sprintf("crash at %s", p)
	}
}
