package cli

import (
	"strings"
	"testing"

	"github.com/idembench/idembench/internal/testenv"
)

// TestJoinMemoryRefusals: memory-backed worker processes run only when
// they join with keys sharded by host; local workers and workers that
// share keys are refused with a usage error that says why and what works.
// A joined run on memory is taken: with no worker joining, it ends as an
// environment error naming the missing worker, not a usage error.
func TestJoinMemoryRefusals(t *testing.T) {
	r := runCLI(t, "run", "--workers", "2", "--join", testenv.NATSURL(t), "--join-wait", "1s", "--no-save", "--no-progress")
	if r.code != exitEnvironment || !strings.Contains(r.err, "worker 0 did not join") {
		t.Fatalf("memory-backed joined run, nobody joins: exit %d, want %d naming worker 0\n%s%s", r.code, exitEnvironment, r.stdout, r.err)
	}
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
