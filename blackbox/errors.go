package blackbox

import (
	"errors"
	"fmt"

	"github.com/idembench/idembench/checker"
)

// Sentinel errors of Run, one per exit class. Every error Run returns
// wraps exactly one of ErrUsage, ErrEnvironment, ErrViolation,
// ErrDeviation, ErrInconclusive or ErrThreshold (ErrOracle,
// ErrServiceExited and ErrNoSuccess come with one of those too), each of
// them of one of checker's classes: checker.ExitCode maps them to the exit
// codes of every idembench command.
var (
	// ErrUsage means the Spec or the target file is wrong: an unknown or
	// missing field, a bad template, a value out of range (exit 2).
	ErrUsage = checker.Classed("blackbox: invalid spec", checker.ErrUsage)
	// ErrEnvironment means the run could not be carried out: the service
	// is unreachable, never became ready or died, a port could not be
	// opened, the oracle could not be read (exit 5).
	ErrEnvironment = checker.Classed("blackbox: environment", checker.ErrEnvironment)
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
	ErrViolation = checker.Classed("blackbox: violation", checker.ErrViolation)
	// ErrDeviation means no safety check failed but a conformance probe
	// found a MUST of the draft or of the declared profile broken, and the
	// target did not declare the deviation (exit 6; under Spec.Strict the
	// run fails with ErrViolation instead). Outcome.Conformance has the
	// rows.
	ErrDeviation = checker.Classed("blackbox: protocol deviation", checker.ErrDeviation)
	// ErrInconclusive means no violation was found but the check could not
	// prove the history correct (checker timeout, no calls) (exit 3).
	ErrInconclusive = checker.Classed("blackbox: inconclusive", checker.ErrInconclusive)
	// ErrThreshold means a performance or availability threshold of
	// Spec.Thresholds was missed (exit 4).
	ErrThreshold = checker.Classed("blackbox: threshold missed", checker.ErrThreshold)
)

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

func envf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrEnvironment, fmt.Sprintf(format, args...))
}

func oraclef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrOracle, fmt.Sprintf(format, args...))
}
