package checker

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	usage := Classed("pkg: invalid configuration", ErrUsage)
	env := Classed("pkg: backend down", ErrEnvironment)
	cases := []struct {
		err       error
		code      int
		hasClass  bool
		wantShown string
	}{
		{nil, ExitPass, true, ""},
		{fmt.Errorf("run: %w", usage), ExitUsage, true, "run: pkg: invalid configuration"},
		{fmt.Errorf("run: %w", env), ExitEnvironment, true, "run: pkg: backend down"},
		{fmt.Errorf("%w: 3 keys", ErrViolation), ExitViolation, true, "safety violation: 3 keys"},
		{ErrInconclusive, ExitInconclusive, true, "inconclusive"},
		{ErrThreshold, ExitThreshold, true, "threshold missed"},
		{fmt.Errorf("%w: missing-key", ErrDeviation), ExitDeviation, true, "protocol deviation: missing-key"},
		// A violation outranks a deviation.
		{errors.Join(fmt.Errorf("%w: x", ErrDeviation), ErrViolation), ExitViolation, true, ""},
		{fmt.Errorf("stopped: %w", context.Canceled), ExitInterrupted, true, "stopped: context canceled"},
		{ErrInterrupted, ExitInterrupted, true, "interrupted"},
		// A configuration error is named before what else failed.
		{errors.Join(env, usage), ExitUsage, true, ""},
		{errors.New("unknown flag --x"), ExitEnvironment, false, ""},
	}
	for _, c := range cases {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.code)
		}
		if got := HasClass(c.err); got != c.hasClass {
			t.Errorf("HasClass(%v) = %v, want %v", c.err, got, c.hasClass)
		}
		if c.wantShown != "" && c.err.Error() != c.wantShown {
			t.Errorf("message %q, want %q: the class adds no text", c.err.Error(), c.wantShown)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", usage), usage) || errors.Is(usage, ErrEnvironment) {
		t.Fatal("a classed sentinel is itself and its class, nothing else")
	}
}

func TestVerdictExit(t *testing.T) {
	for v, want := range map[Verdict]int{VerdictOK: ExitPass, VerdictViolation: ExitViolation, VerdictInconclusive: ExitInconclusive, "": ExitInconclusive} {
		if got := v.Exit(); got != want {
			t.Errorf("%q.Exit() = %d, want %d", v, got, want)
		}
	}
}
