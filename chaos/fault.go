package chaos

import (
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Fault is one planned fault: what it does (Kind and the parameters of
// that kind), and when. It is the one planned form of every fault the
// harness injects; history.Fault is the one recorded form. Where it
// applies:
//
//   - crash and pause in the engine (New, a scenario's faults): hit the
//     executions that reach Point, Count times at seeded offsets in
//     [Start, End) or each with Probability;
//   - restart of a backend server and the network kinds on a proxy in
//     front of it (chaos/backendfault, the --restart-at, --net-fault and
//     --aim-* flags): fire once at Start, or, aimed, at the first
//     execution that reaches a non-zero Point; a network fault stays on
//     for Duration;
//   - the network kinds, pause and kill of a service under test
//     (blackbox, http --faults): fire once at Start for Duration.
//
// The zero values of the fields a kind does not use are required;
// Validate says which rule a fault breaks.
type Fault struct {
	// Kind is what the fault does.
	Kind history.FaultKind
	// Point is where a crash or pause hits an execution; zero means
	// idem.PointBeforeFn. A pause must be at PointAfterAcquire or
	// PointBeforeFn: only there is no heartbeat running, so only there
	// does it model a holder stalled past its lease. On a restart or
	// network fault a non-zero Point aims it: it fires once, from the
	// engine hook, when the first execution reaches Point, not at Start.
	Point idem.Point
	// Count is how many executions a crash or pause hits, armed at seeded
	// offsets spread over [Start, End). Exactly one of Count and
	// Probability is set for those kinds; neither for the others.
	Count int
	// Probability is the chance, in (0, 1], that an execution reaching
	// Point in [Start, End) is hit.
	Probability float64
	// Start is when the fault may fire, measured from the start of the
	// run's traffic: the start of a crash's or pause's window, the instant
	// of any other fault. End bounds the window of a crash or pause; zero
	// means the end of the run's traffic. Other kinds leave it zero.
	Start, End time.Duration
	// Duration is how long the fault lasts: the stall of a pause (it must
	// be positive for a pause and zero for a crash; to model a holder
	// paused past its lease it must be longer than the lease TTL, which
	// the scenario decides), how long a network fault stays on, how long
	// a killed service or an aimed restart keeps the server down.
	Duration time.Duration
	// Latency is the delay a latency fault adds to each reply; it must be
	// positive for that kind and zero for the others.
	Latency time.Duration
	// Jitter, for a latency fault only, makes each delay uniform in
	// [Latency-Jitter, Latency+Jitter); zero means none, and it must not
	// exceed Latency.
	Jitter time.Duration
	// ThenFail makes a paused execution fail with ErrInjected (a retryable
	// error, so the engine releases the key) once it resumes, instead of
	// running its side effect. Pause in the engine only.
	ThenFail bool
}

// InEngine reports whether the engine's fault hook injects f's kind (a
// crash or a pause at a point): the kinds New and a scenario accept.
func (f Fault) InEngine() bool {
	return f.Kind == history.FaultCrash || f.Kind == history.FaultPause
}

// Aimed reports whether f is a restart or network fault aimed at the
// first execution that reaches its Point rather than timed at Start.
func (f Fault) Aimed() bool { return !f.InEngine() && f.Point != 0 }

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
// that check. A kind no Fault can plan (failover, whose topology
// chaos/backendfault.Failover describes; stop, which consume plans by
// count; clock-skew) is an error.
func (f *Fault) Validate(runFor time.Duration) error {
	var err error
	switch {
	case f.InEngine():
		err = f.validateInEngine()
	case f.Kind.Network():
		err = f.validateNetwork()
	case f.Kind == history.FaultRestart || f.Kind == history.FaultKill:
		if f.Latency != 0 || f.Jitter != 0 {
			err = fmt.Errorf("chaos: %s takes no latency or jitter", f.Kind)
		}
	case f.Kind.Valid():
		return fmt.Errorf("chaos: a %s fault is not planned as a chaos.Fault", f.Kind)
	default:
		return fmt.Errorf("chaos: %w", unknownKind(f.Kind))
	}
	if err != nil {
		return err
	}
	switch {
	case !f.InEngine() && (f.Count != 0 || f.Probability != 0 || f.End != 0 || f.ThenFail):
		return fmt.Errorf("chaos: a %s fault fires once: it takes no count, probability, window end or then_fail", f.Kind)
	case f.Point != 0 && (f.Point < idem.PointAfterAcquire || f.Point > idem.PointAfterComplete):
		return fmt.Errorf("chaos: %s at invalid point %d", f.Kind, f.Point)
	case f.Duration < 0:
		return fmt.Errorf("chaos: negative duration %s", f.Duration)
	case f.Start < 0 || f.End < 0:
		return fmt.Errorf("chaos: negative window start or end")
	case f.End != 0 && f.End <= f.Start:
		return fmt.Errorf("chaos: window end %s not after start %s", f.End, f.Start)
	case runFor > 0 && f.Start >= runFor:
		return fmt.Errorf("chaos: window start %s not before the end of the run (%s)", f.Start, runFor)
	}
	return nil
}

// unknownKind is the error of a kind outside history.FaultKinds.
func unknownKind(k history.FaultKind) error {
	_, err := history.ParseFaultKind(string(k))
	return err
}

func (f *Fault) validateInEngine() error {
	switch {
	case f.Kind == history.FaultCrash && (f.Duration != 0 || f.ThenFail):
		return fmt.Errorf("chaos: crash fault takes no duration or then_fail")
	case f.Kind == history.FaultPause && f.Duration <= 0:
		return fmt.Errorf("chaos: pause fault needs a positive duration")
	case f.Kind == history.FaultPause && f.Point != 0 && f.Point != idem.PointAfterAcquire && f.Point != idem.PointBeforeFn:
		return fmt.Errorf("chaos: pause at %s: a pause must be at after-acquire or before-fn, where no heartbeat runs", f.Point)
	case f.Latency != 0 || f.Jitter != 0:
		return fmt.Errorf("chaos: %s takes no latency or jitter", f.Kind)
	case f.Count < 0:
		return fmt.Errorf("chaos: negative count %d", f.Count)
	case f.Probability < 0 || f.Probability > 1:
		return fmt.Errorf("chaos: probability %g outside [0, 1]", f.Probability)
	case (f.Count > 0) == (f.Probability > 0):
		return fmt.Errorf("chaos: %s fault needs exactly one of count and probability", f.Kind)
	}
	return nil
}

func (f *Fault) validateNetwork() error {
	if f.Kind != history.FaultLatency {
		if f.Latency != 0 || f.Jitter != 0 {
			return fmt.Errorf("chaos: %s takes no latency or jitter", f.Kind)
		}
		return nil
	}
	switch {
	case f.Latency <= 0:
		return fmt.Errorf("chaos: latency %s: want a positive delay", f.Latency)
	case f.Jitter < 0 || f.Jitter > f.Latency:
		return fmt.Errorf("chaos: jitter %s: want between 0 and the latency %s", f.Jitter, f.Latency)
	}
	return nil
}

// point returns where an engine fault hits: Point, or PointBeforeFn.
func (f Fault) point() idem.Point {
	if f.Point == 0 {
		return idem.PointBeforeFn
	}
	return f.Point
}

// Label describes f for its fault window in the history: "crash at
// after-fn", "pause 2s at before-fn then fail", "latency 50ms±10ms" (or
// "latency 50ms" without jitter), "partition", "restart".
func (f Fault) Label() string {
	switch {
	case f.Kind == history.FaultCrash:
		return fmt.Sprintf("crash at %s", f.point())
	case f.Kind == history.FaultPause:
		s := fmt.Sprintf("pause %s at %s", f.Duration, f.point())
		if f.ThenFail {
			s += " then fail"
		}
		return s
	case f.Kind == history.FaultLatency && f.Jitter == 0:
		return fmt.Sprintf("latency %s", f.Latency)
	case f.Kind == history.FaultLatency:
		return fmt.Sprintf("latency %s±%s", f.Latency, f.Jitter)
	}
	return string(f.Kind)
}
