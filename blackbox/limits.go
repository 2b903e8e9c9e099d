package blackbox

import (
	"fmt"
	"time"

	"github.com/idembench/idembench/workload"
)

// Limits of a target file and of a Spec, checked by ParseTarget,
// Target.Validate, Spec.Validate and Run before anything starts. A value
// beyond one is an ErrUsage error that names the field and the limit. The
// workload fields of a Spec (Duration, Clients, Rate, Keys, Retry) have
// the limits of package workload: Duration at most workload.MaxDuration
// (24h), Clients at most workload.MaxClients (10000), Rate at most
// workload.MaxRate, Retry.Timeout from workload.MinTimeout (1ms) to
// workload.MaxWait (10m).
const (
	// MaxTargetFileSize bounds a target file, as scenarios.MaxFileSize
	// bounds a scenario file.
	MaxTargetFileSize = 1 << 20
	// MaxNameLen bounds the target's name, in bytes.
	MaxNameLen = 100
	// MaxEntries bounds each list and map of a target: operation.success,
	// operation.headers, start.command (with the arguments the CLI's
	// --start-arg appends), start.env and conformance.isolation_headers.
	MaxEntries = 100
	// MaxAmount bounds the magnitude of operation.amount_min and
	// operation.amount_max (every such integer is exact in a JSON number).
	MaxAmount = 1_000_000_000_000_000
	// MaxWait bounds every wait of a target and a Spec:
	// start.ready_timeout, oracle.latency, Spec.ProbeAfter, and a fault's
	// For and Latency. It is workload.MaxWait.
	MaxWait = workload.MaxWait
	// MaxFaults bounds Spec.Faults.
	MaxFaults = 100
	// MaxCheckTimeout bounds Spec.CheckTimeout, as the scenarios bound
	// check_timeout.
	MaxCheckTimeout = time.Hour
)

// waitLimit checks that d, the value of field, is not negative and at most
// MaxWait.
func waitLimit(field string, d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%s: %s is negative", field, d)
	case d > MaxWait:
		return fmt.Errorf("%s: %s is above the limit of %s", field, d, MaxWait)
	}
	return nil
}

// countLimit checks that field has at most MaxEntries entries.
func countLimit(field string, n int) error {
	if n > MaxEntries {
		return fmt.Errorf("%s: %d entries, above the limit of %d", field, n, MaxEntries)
	}
	return nil
}

// checkToken checks that s, the value of field, is an HTTP token (RFC 9110
// §5.6.2): what a method or a header name may be. A carriage return or a
// line feed in one would let the target file split a request in two.
func checkToken(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s: empty", field)
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return fmt.Errorf("%s: %q is not an HTTP token (byte %q at %d; want letters, digits and !#$%%&'*+-.^_`|~)", field, s, s[i], i)
		}
	}
	return nil
}

func isTokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// checkText checks that s, the value of field, holds no control byte (a
// tab is allowed where tab is set): what a header value, a path or a name
// may hold.
func checkText(field, s string, tab bool) error {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < 0x20 && !(tab && b == '\t')) || b == 0x7f {
			return fmt.Errorf("%s: %q holds a control byte (%q at %d)", field, s, b, i)
		}
	}
	return nil
}

// checkNoNUL checks that s, the value of field, holds no NUL byte: an
// argument or an environment variable of a process cannot.
func checkNoNUL(field, s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%s: %q holds a NUL byte", field, s)
		}
	}
	return nil
}
