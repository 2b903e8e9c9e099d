package chaos

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// The text form of a network fault, as the --net-fault and --aim-net flags
// write it: KIND@START+LENGTH for a window, KIND+LENGTH for an aimed
// fault, where KIND is drop-replies, reset, partition or latency with an
// optional delay and jitter (latency:50ms, latency:50ms~10ms).

// ErrSyntax reports a fault text ParseWindow or ParseAim cannot read.
var ErrSyntax = errors.New("chaos: want KIND@START+LENGTH (a window) or KIND+LENGTH (aimed)")

// AimPoint is where ParseAim aims a network fault: right after one
// execution's effect, so that its completion's write goes into it.
const AimPoint = idem.PointAfterFn

// DefaultLatency is the delay of a latency fault written without one.
const DefaultLatency = 50 * time.Millisecond

// Spec is the KIND part of f's text form: "latency:50ms~10ms",
// "latency:50ms", "partition".
func (f Fault) Spec() string {
	switch {
	case f.Kind != history.FaultLatency:
		return string(f.Kind)
	case f.Jitter == 0:
		return fmt.Sprintf("%s:%s", f.Kind, f.Latency)
	}
	return fmt.Sprintf("%s:%s~%s", f.Kind, f.Latency, f.Jitter)
}

// String renders a network fault in its text form, which ParseWindow (or
// ParseAim, for an aimed one) parses back to f: "partition@1s+300ms",
// "partition+1s". Other faults render as their Label.
func (f Fault) String() string {
	switch {
	case !f.Kind.Network():
		return f.Label()
	case f.Aimed():
		return f.Spec() + "+" + f.Duration.String()
	}
	return f.Spec() + "@" + f.Start.String() + "+" + f.Duration.String()
}

// ParseWindow parses KIND@START+LENGTH (e.g. drop-replies@1s+400ms,
// latency:50ms~10ms@1s+500ms) into a network fault on at START for
// LENGTH. A latency without delay is DefaultLatency; no other kind takes
// an argument. START must not be negative and LENGTH must be positive; a
// text without '@' or '+' is an error wrapping ErrSyntax, and the fault
// must pass Validate.
func ParseWindow(s string) (Fault, error) {
	spec, rest, ok := strings.Cut(s, "@")
	if !ok {
		return Fault{}, ErrSyntax
	}
	start, length, ok := strings.Cut(rest, "+")
	if !ok {
		return Fault{}, ErrSyntax
	}
	at, err := time.ParseDuration(start)
	if err != nil {
		return Fault{}, fmt.Errorf("chaos: start: %w", err)
	}
	if at < 0 {
		return Fault{}, errors.New("chaos: start must not be negative")
	}
	f, err := parseNetwork(spec, length)
	f.Start = at
	if err != nil {
		return f, err
	}
	return f, f.Validate(0)
}

// ParseAim parses KIND+LENGTH (e.g. partition+1s) into a network fault
// aimed at AimPoint that stays on for LENGTH; KIND is as in ParseWindow.
func ParseAim(s string) (Fault, error) {
	spec, length, ok := strings.Cut(s, "+")
	if !ok || strings.Contains(spec, "@") {
		return Fault{}, fmt.Errorf("%w: aimed fault %q: want KIND+LENGTH (e.g. partition+1s)", ErrSyntax, s)
	}
	f, err := parseNetwork(spec, length)
	f.Point = AimPoint
	if err != nil {
		return f, err
	}
	return f, f.Validate(0)
}

// parseNetwork parses the KIND and LENGTH of a network fault's text.
func parseNetwork(spec, length string) (Fault, error) {
	var f Fault
	var err error
	if f.Duration, err = time.ParseDuration(length); err != nil {
		return f, fmt.Errorf("chaos: length: %w", err)
	}
	if f.Duration <= 0 {
		return f, errors.New("chaos: length must be positive")
	}
	kind, arg, _ := strings.Cut(spec, ":")
	if f.Kind, err = history.ParseFaultKind(kind, history.FaultLatency, history.FaultReset, history.FaultDropReplies, history.FaultPartition); err != nil {
		return f, fmt.Errorf("chaos: %w", err)
	}
	if f.Kind != history.FaultLatency {
		if arg != "" {
			return f, fmt.Errorf("chaos: %s takes no argument", kind)
		}
		return f, nil
	}
	f.Latency = DefaultLatency
	if arg == "" {
		return f, nil
	}
	delay, jitter, hasJitter := strings.Cut(arg, "~")
	if f.Latency, err = time.ParseDuration(delay); err != nil {
		return f, fmt.Errorf("chaos: latency: %w", err)
	}
	if hasJitter {
		if f.Jitter, err = time.ParseDuration(jitter); err != nil {
			return f, fmt.Errorf("chaos: jitter: %w", err)
		}
	}
	return f, nil
}
