package checker

import (
	"context"
	"errors"
)

// The exit codes of every idembench command: the one table. A library run
// (harness.Run, blackbox.Run, consume.Run, …) returns an error of one of
// the classes below, and ExitCode turns it into its code.
const (
	ExitPass         = 0
	ExitViolation    = 1
	ExitUsage        = 2
	ExitInconclusive = 3
	ExitThreshold    = 4
	ExitEnvironment  = 5
	// ExitDeviation is a service that kept every safety invariant but
	// broke a MUST of the protocol it declares (a black-box conformance
	// probe: a different request answered with another's result, a
	// declared error policy not kept); idembench http --strict makes it
	// ExitViolation.
	ExitDeviation = 6
	// ExitInterrupted is a run cut short by SIGINT or SIGTERM, as a shell
	// reports a process killed by SIGINT (128 + 2).
	ExitInterrupted = 130
)

// The classes of a run's errors, one per exit code. A package's own
// sentinels belong to one with Classed (harness.ErrConfig is a usage
// error, blackbox.ErrServiceExited an environment error, …), so that one
// function maps every error of every layer.
var (
	// ErrViolation: a safety invariant was broken or a conformance probe
	// failed (exit 1).
	ErrViolation = errors.New("safety violation")
	// ErrUsage: a flag, a scenario, a target file or a configuration is
	// wrong; nothing ran, or what ran cannot be judged (exit 2).
	ErrUsage = errors.New("usage error")
	// ErrInconclusive: nothing was found broken, but the check could not
	// prove the run correct (exit 3).
	ErrInconclusive = errors.New("inconclusive")
	// ErrThreshold: a latency, throughput or error-rate threshold was
	// missed (exit 4).
	ErrThreshold = errors.New("threshold missed")
	// ErrEnvironment: a backend, broker or service was unreachable, or died
	// during the run by no planned fault (exit 5).
	ErrEnvironment = errors.New("environment error")
	// ErrDeviation: no safety invariant was broken, but the service
	// deviates from a MUST of the protocol it declares (exit 6).
	ErrDeviation = errors.New("protocol deviation")
	// ErrInterrupted: the run was stopped by a signal (exit 130).
	ErrInterrupted = errors.New("interrupted")
)

var classes = []struct {
	err  error
	code int
}{
	// A configuration that cannot run is named before what else failed.
	{ErrUsage, ExitUsage},
	{ErrViolation, ExitViolation},
	{ErrDeviation, ExitDeviation},
	{ErrInconclusive, ExitInconclusive},
	{ErrThreshold, ExitThreshold},
	{ErrEnvironment, ExitEnvironment},
}

// ExitCode returns the exit code of err: 0 for nil, 130 for an interruption
// (ErrInterrupted or context.Canceled), else its class's code. An error of
// no class is ExitEnvironment: the run did not happen as asked.
func ExitCode(err error) int {
	code, _ := exitClass(err)
	return code
}

// HasClass reports whether err is nil, an interruption or of one of the
// classes, so that ExitCode does not have to guess.
func HasClass(err error) bool {
	_, ok := exitClass(err)
	return ok
}

func exitClass(err error) (int, bool) {
	switch {
	case err == nil:
		return ExitPass, true
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted, true
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.code, true
		}
	}
	return ExitEnvironment, false
}

// Exit returns the exit code of verdict v: 0 ok, 1 violation, 3
// inconclusive (and an empty or unknown verdict).
func (v Verdict) Exit() int {
	switch v {
	case VerdictOK:
		return ExitPass
	case VerdictViolation:
		return ExitViolation
	}
	return ExitInconclusive
}

// Classed returns a sentinel error with text msg that belongs to class (one
// of ErrViolation, ErrDeviation, ErrUsage, ErrInconclusive, ErrThreshold,
// ErrEnvironment, ErrInterrupted): errors.Is finds both the sentinel itself and its class,
// and the class adds nothing to the message.
func Classed(msg string, class error) error {
	return &classed{msg: msg, class: class}
}

type classed struct {
	msg   string
	class error
}

func (e *classed) Error() string        { return e.msg }
func (e *classed) Is(target error) bool { return target == e.class }
