package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/idembench/idembench/blackbox"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
)

// Exit codes: checker's table, the one of every command, as
// docs/design/verification.md explains them.
const (
	exitOK           = checker.ExitPass
	exitViolation    = checker.ExitViolation
	exitUsage        = checker.ExitUsage
	exitInconclusive = checker.ExitInconclusive
	exitThreshold    = checker.ExitThreshold
	exitEnvironment  = checker.ExitEnvironment
	exitDeviation    = checker.ExitDeviation
	exitInterrupted  = checker.ExitInterrupted
)

// Outcomes a command reports as errors so that they reach the exit code;
// the command has printed them already.
var (
	errViolation    = checker.ErrViolation
	errInconclusive = checker.ErrInconclusive
	errThreshold    = checker.ErrThreshold
)

// exitCode maps a command's error to its exit code: checker.ExitCode, the
// one table, for every error of a class (every package's sentinels have
// one); an error of none comes from the command line's parser, a usage
// error.
func exitCode(err error) int {
	switch {
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case checker.HasClass(err):
		return checker.ExitCode(err)
	}
	return exitUsage
}

// codeError returns an error with exit code code (one of the verdict or
// threshold codes, or environment) and msg.
func codeError(code int, msg string) error {
	kind := map[int]error{exitViolation: errViolation, exitInconclusive: errInconclusive, exitThreshold: errThreshold,
		exitEnvironment: harness.ErrEnvironment, exitDeviation: checker.ErrDeviation}[code]
	if code == exitOK {
		return nil
	}
	if kind == nil {
		return harness.ConfigError("%s", msg)
	}
	return fmt.Errorf("%w: %s", kind, msg)
}

// runError returns a library run's error (harness, blackbox, consume)
// for the exit code: its own when it has one of checker's classes (every
// package's sentinels have one); anything else is an environment error,
// the run did not happen as asked.
func runError(err error) error {
	if checker.HasClass(err) {
		return err
	}
	return harness.EnvironmentError(err)
}

// noVerdict reports whether a library run's error leaves nothing to judge
// (a usage or an environment error, or an error of no class): the command
// discards its run directory and returns runError(err). A verdict, a
// missed threshold and nil have a run to report.
func noVerdict(err error) bool {
	code := checker.ExitCode(err)
	return code == exitUsage || code == exitEnvironment
}

// alreadyReported reports whether err is a verdict or threshold the
// command has printed: it is not printed again.
func alreadyReported(err error) bool {
	return errors.Is(err, errViolation) || errors.Is(err, errInconclusive) || errors.Is(err, errThreshold) ||
		errors.Is(err, checker.ErrDeviation)
}

// usage returns a usage error (exit 2) about the command line.
func usage(format string, args ...any) error { return harness.ConfigError(format, args...) }

// verdictError returns the error of a verdict (nil for ok, and for a run
// that was not checked: "unchecked" in a summary.json).
func verdictError(v checker.Verdict) error {
	switch v {
	case checker.VerdictViolation:
		return codeError(exitViolation, "verdict "+string(v))
	case checker.VerdictInconclusive:
		return codeError(exitInconclusive, "verdict "+string(v))
	case blackbox.VerdictDeviation: // a black-box run's protocol deviation
		return codeError(exitDeviation, "verdict "+string(v))
	}
	return nil
}

// exitRank orders exit codes from best to worst: a safety violation is the
// worst news, then a configuration that could not run, an unreachable
// backend, a protocol deviation, an inconclusive check and a missed
// threshold; an interrupt
// outranks them all (the user stopped the command).
var exitRank = []int{exitOK, exitThreshold, exitInconclusive, exitDeviation, exitEnvironment, exitUsage, exitViolation, exitInterrupted}

// worseExit returns the worse of two exit codes.
func worseExit(a, b int) int {
	if slices.Index(exitRank, b) > slices.Index(exitRank, a) {
		return b
	}
	return a
}
