package harness

import (
	"errors"
	"fmt"

	"github.com/idembench/idembench/checker"
)

// Errors of a run that did not produce a verdict. A verdict is never an
// error: a violation, an inconclusive check or a missed threshold are in
// the Outcome.
var (
	// ErrConfig reports a Spec the harness cannot run: an unknown
	// scenario, engine, backend or sink, a combination that does not go
	// together, a bad URL or an output directory that cannot be written.
	ErrConfig = checker.Classed("harness: invalid configuration", checker.ErrUsage)
	// ErrEnvironment reports a backend or a machine resource that did not
	// answer: a server that is down, a migration refused, a worker
	// process that could not start, a fault that could not be injected.
	ErrEnvironment = checker.Classed("harness: environment error", checker.ErrEnvironment)
	// ErrBackendDied reports a backend server that died or froze during a
	// run by no fault of the run's plan (Prepared.CheckBackend): the run
	// was not checked. It comes wrapped with ErrEnvironment.
	ErrBackendDied = errors.New("backend died during the run")
)

// kindError is an error of one of the kinds above whose message is its
// cause's alone.
type kindError struct {
	kind, err error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// ConfigError returns an error wrapping ErrConfig with the message of
// format and args (%w is honoured).
func ConfigError(format string, args ...any) error {
	return &kindError{kind: ErrConfig, err: fmt.Errorf(format, args...)}
}

// EnvironmentError returns err wrapped in ErrEnvironment, or nil for nil.
// An error that already wraps ErrConfig or ErrEnvironment is returned as it
// is.
func EnvironmentError(err error) error {
	if err == nil || errors.Is(err, ErrConfig) || errors.Is(err, ErrEnvironment) {
		return err
	}
	return &kindError{kind: ErrEnvironment, err: err}
}
