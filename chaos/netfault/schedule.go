package netfault

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Timed is a network fault planned for a run: on at At, off For later,
// both measured from the start of the run's traffic.
type Timed struct {
	Fault   Fault
	At, For time.Duration
}

// String renders t in ParseWindow's syntax, which parses back to t.
func (t Timed) String() string {
	return t.Fault.Spec() + "@" + t.At.String() + "+" + t.For.String()
}

// Spec is the KIND part of ParseWindow's syntax for f (latency:50ms~10ms,
// partition).
func (f Fault) Spec() string {
	switch {
	case f.Kind != KindLatency:
		return string(f.Kind)
	case f.Jitter == 0:
		return fmt.Sprintf("%s:%s", f.Kind, f.Latency)
	}
	return fmt.Sprintf("%s:%s~%s", f.Kind, f.Latency, f.Jitter)
}

// ErrWindowSyntax reports a fault window ParseWindow cannot read.
var ErrWindowSyntax = errors.New("netfault: want KIND@START+LENGTH")

// ParseWindow parses KIND@START+LENGTH (e.g. drop-replies@1s+400ms), where
// latency takes an optional delay and jitter, latency:50ms@1s+500ms or
// latency:50ms~10ms@1s+500ms (50 ms without jitter when omitted; no other
// kind takes an argument). START must not be negative and LENGTH must be positive; a text
// without '@' or '+' is an error wrapping ErrWindowSyntax, and the fault
// must pass Fault.Validate.
func ParseWindow(s string) (Timed, error) {
	var t Timed
	kind, rest, ok := strings.Cut(s, "@")
	if !ok {
		return t, ErrWindowSyntax
	}
	start, length, ok := strings.Cut(rest, "+")
	if !ok {
		return t, ErrWindowSyntax
	}
	var err error
	if t.At, err = time.ParseDuration(start); err != nil {
		return t, fmt.Errorf("netfault: start: %w", err)
	}
	if t.For, err = time.ParseDuration(length); err != nil {
		return t, fmt.Errorf("netfault: length: %w", err)
	}
	if t.At < 0 || t.For <= 0 {
		return t, errors.New("netfault: start must not be negative and length must be positive")
	}
	k, arg, _ := strings.Cut(kind, ":")
	t.Fault.Kind = Kind(k)
	if arg != "" && t.Fault.Kind != KindLatency {
		return t, fmt.Errorf("netfault: %s takes no argument", k)
	}
	if t.Fault.Kind == KindLatency {
		t.Fault.Latency = 50 * time.Millisecond
		if arg != "" {
			delay, jitter, hasJitter := strings.Cut(arg, "~")
			if t.Fault.Latency, err = time.ParseDuration(delay); err != nil {
				return t, fmt.Errorf("netfault: latency: %w", err)
			}
			if hasJitter {
				if t.Fault.Jitter, err = time.ParseDuration(jitter); err != nil {
					return t, fmt.Errorf("netfault: jitter: %w", err)
				}
			}
		}
	}
	return t, t.Fault.Validate()
}
