package cli

import (
	"strings"
	"testing"
)

// TestJoinMemoryRefusals: memory-backed worker processes run only when
// they join with keys sharded by host; local workers and workers that
// share keys are refused with a usage error that says why and what works.
func TestJoinMemoryRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--workers", "2", "--no-save"}, []string{"--workers needs --backend redis or postgres", "memory-backed workers run with --join"}},
		{[]string{"run", "--workers", "2", "--join", "nats://127.0.0.1:1", "--join-span-keys", "--no-save"},
			[]string{"--join-span-keys needs --backend redis or postgres", "leave out --join-span-keys"}},
	} {
		r := runCLI(t, append(c.args, "--no-progress")...)
		if r.code != exitUsage {
			t.Fatalf("%v: exit %d, want %d\n%s%s", c.args, r.code, exitUsage, r.stdout, r.err)
		}
		for _, w := range c.want {
			if !strings.Contains(r.err, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, r.err)
			}
		}
	}
}
