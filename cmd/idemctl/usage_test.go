package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestIdemctlUsageErrors checks the usage errors (exit 2) that need no
// store: issue #23 item 7 asks that "COMMAND --help" works without --store
// and that negative list bounds are refused.
func TestIdemctlUsageErrors(t *testing.T) {
	t.Setenv("IDEMCTL_STORE", "")
	b := redisBackend(t) // a store for the cases that would reach one
	tests := []struct {
		name   string
		store  bool // with the backend's flags
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"command help without a store", false, []string{"inspect", "--help"}, 0, "usage: idemctl [global flags] inspect KEY", ""},
		{"command -h without a store", false, []string{"purge-corrupt", "-h"}, 0, "--confirm DIGEST", ""},
		{"list help", false, []string{"list", "--stuck", "-help"}, 0, "--corrupt", ""},
		{"a command without a store", false, []string{"stats"}, exitUsage, "", "--store"},
		{"negative older-than", true, []string{"list", "--stuck", "--older-than=-5m"}, exitUsage, "", "--older-than -5m0s is negative"},
		{"negative limit", true, []string{"list", "--stuck", "--limit", "-1"}, exitUsage, "", "--limit -1: want at least 1"},
		{"zero limit", true, []string{"list", "--corrupt", "--limit", "0"}, exitUsage, "", "--limit 0"},
		{"limit not a number", true, []string{"list", "--stuck", "--limit", "x"}, exitUsage, "", `invalid value "x" for flag -limit`},
		{"list of nothing", true, []string{"list"}, exitUsage, "", "give one of --stuck, --corrupt and --uncertain"},
		{"list of both", true, []string{"list", "--stuck", "--corrupt"}, exitUsage, "", "give one of"},
		{"older-than with corrupt", true, []string{"list", "--corrupt", "--older-than", "1m"}, exitUsage, "", "--stuck only"},
		{"stats with a scope", true, []string{"--scope", "acme", "stats"}, exitUsage, "", "--scope does not apply"},
		{"empty nested scope", true, []string{"--scope", "a::b", "inspect", "k"}, exitUsage, "", "empty scope"},
		{"key too long for its scope", true, []string{"--scope", "acme", "inspect", strings.Repeat("k", 251)}, exitUsage, "", "invalid idempotency key"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		args := tt.args
		if tt.store {
			args = append(append([]string{}, b.flags...), args...)
		}
		code := run(context.Background(), args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
			t.Errorf("%s: exit %d, want %d\nstdout (want %q): %s\nstderr (want %q): %s",
				tt.name, code, tt.code, tt.stdout, out.String(), tt.stderr, errb.String())
		}
	}
}
