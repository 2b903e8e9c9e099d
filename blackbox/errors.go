package blackbox

import (
	"errors"
	"fmt"
)

// Sentinel errors of Run, one per exit class. Every error Run returns
// wraps exactly one of ErrUsage, ErrEnvironment, ErrViolation,
// ErrInconclusive or ErrThreshold (ErrConformance, ErrOracle,
// ErrServiceExited and ErrNoSuccess come with one of those too); ExitCode
// maps them to the CLI's exit codes.
var (
	// ErrUsage means the Spec or the target file is wrong: an unknown or
	// missing field, a bad template, a value out of range (exit 2).
	ErrUsage = errors.New("blackbox: invalid spec")
	// ErrEnvironment means the run could not be carried out: the service
	// is unreachable, never became ready or died, a port could not be
	// opened, the oracle could not be read (exit 5).
	ErrEnvironment = errors.New("blackbox: environment")
	// ErrOracle means the effects oracle answered something that is not a
	// valid answer (garbage, a wrong shape, an error status). It wraps
	// ErrEnvironment.
	ErrOracle = fmt.Errorf("%w: effects oracle", ErrEnvironment)
	// ErrServiceExited means the service the harness started (Start)
	// exited during the run although no fault of the run killed it. It
	// wraps ErrEnvironment: what the service did after it died is not a
	// verdict on its idempotency.
	ErrServiceExited = fmt.Errorf("%w: service exited", ErrEnvironment)
	// ErrNoSuccess means no request of the workload got a success status
	// and the oracle saw no effect: the service never performed the
	// operation, so there is nothing to check (every key would look stuck
	// or failed). The error says which statuses came back, how often, and
	// shows one answer. It comes with ErrUsage (exit 2) when every answer
	// that came back (attempts without one aside) was a client error that
	// refuses the request as the target file builds it (a 4xx other than
	// 408, 409 and 429: a wrong method, path, header or body), and with
	// ErrEnvironment (exit 5) otherwise (a 5xx, 408, 409 or 429 among
	// them, or no answer at all: the service does not work).
	ErrNoSuccess = errors.New("blackbox: no request succeeded")
	// ErrViolation means the checker found a double execution or another
	// invariant broken (exit 1). Outcome.Check has the details.
	ErrViolation = errors.New("blackbox: violation")
	// ErrConformance means a conformance probe failed and the target did
	// not declare the deviation. It wraps ErrViolation (exit 1).
	ErrConformance = fmt.Errorf("%w: conformance", ErrViolation)
	// ErrInconclusive means no violation was found but the check could not
	// prove the history correct (checker timeout, no calls) (exit 3).
	ErrInconclusive = errors.New("blackbox: inconclusive")
	// ErrThreshold means a performance or availability threshold of
	// Spec.Thresholds was missed (exit 4).
	ErrThreshold = errors.New("blackbox: threshold missed")
)

// Exit codes returned by ExitCode; they are the codes of every idembench
// command.
const (
	ExitPass         = 0
	ExitViolation    = 1
	ExitUsage        = 2
	ExitInconclusive = 3
	ExitThreshold    = 4
	ExitEnvironment  = 5
)

// ExitCode maps an error returned by Run to the CLI's exit code: nil is 0,
// ErrViolation (and ErrConformance) 1, ErrUsage 2, ErrInconclusive 3,
// ErrThreshold 4, ErrEnvironment (and ErrOracle) 5. Any other error,
// context cancellation included, is 5: the run did not happen as asked.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitPass
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrViolation):
		return ExitViolation
	case errors.Is(err, ErrInconclusive):
		return ExitInconclusive
	case errors.Is(err, ErrThreshold):
		return ExitThreshold
	}
	return ExitEnvironment
}

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

func envf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrEnvironment, fmt.Sprintf(format, args...))
}

func oraclef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrOracle, fmt.Sprintf(format, args...))
}
