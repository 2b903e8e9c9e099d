package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// Exit codes, as docs/design/verification.md defines them.
const (
	exitOK           = 0
	exitViolation    = 1
	exitUsage        = 2
	exitInconclusive = 3
	exitThreshold    = 4
	exitEnvironment  = 5
	// exitInterrupted is a command cut short by SIGINT or SIGTERM, as a
	// shell reports a process killed by SIGINT (128 + 2).
	exitInterrupted = 130
)

// Outcomes a command reports as errors so that they reach the exit code;
// the command has printed them already.
var (
	errViolation    = errors.New("safety violation")
	errInconclusive = errors.New("inconclusive")
	errThreshold    = errors.New("threshold missed")
)

// exitCode maps a command's error to its exit code: the one place where
// errors become exit codes. A configuration error of the harness and an
// error the CLI does not know are usage errors.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted), errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, errViolation):
		return exitViolation
	case errors.Is(err, errInconclusive):
		return exitInconclusive
	case errors.Is(err, errThreshold):
		return exitThreshold
	case errors.Is(err, harness.ErrConfig), errors.Is(err, scenarios.ErrInvalid),
		errors.Is(err, workload.ErrConfig), errors.Is(err, chaos.ErrLimit):
		return exitUsage // before environment: a configuration is wrong whatever else failed
	case errors.Is(err, harness.ErrEnvironment):
		return exitEnvironment
	}
	return exitUsage
}

// codeError returns an error with exit code code (one of the verdict or
// threshold codes, or environment) and msg.
func codeError(code int, msg string) error {
	kind := map[int]error{exitViolation: errViolation, exitInconclusive: errInconclusive, exitThreshold: errThreshold,
		exitEnvironment: harness.ErrEnvironment}[code]
	if code == exitOK {
		return nil
	}
	if kind == nil {
		return harness.ConfigError("%s", msg)
	}
	return fmt.Errorf("%w: %s", kind, msg)
}

// alreadyReported reports whether err is a verdict or threshold the
// command has printed: it is not printed again.
func alreadyReported(err error) bool {
	return errors.Is(err, errViolation) || errors.Is(err, errInconclusive) || errors.Is(err, errThreshold)
}

// usage returns a usage error (exit 2) about the command line.
func usage(format string, args ...any) error { return harness.ConfigError(format, args...) }

// verdictError returns the error of a verdict (nil for ok), as summary.json
// spells it or as the checker does.
func verdictError(v string) error {
	switch v {
	case string(checker.VerdictViolation):
		return codeError(exitViolation, "verdict "+v)
	case string(checker.VerdictInconclusive):
		return codeError(exitInconclusive, "verdict "+v)
	}
	return nil
}

// exitRank orders exit codes from best to worst: a safety violation is the
// worst news, then a configuration that could not run, an unreachable
// backend, an inconclusive check and a missed threshold; an interrupt
// outranks them all (the user stopped the command).
var exitRank = []int{exitOK, exitThreshold, exitInconclusive, exitEnvironment, exitUsage, exitViolation, exitInterrupted}

// worseExit returns the worse of two exit codes.
func worseExit(a, b int) int {
	if slices.Index(exitRank, b) > slices.Index(exitRank, a) {
		return b
	}
	return a
}
