//go:build linux

package servers

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRedisHealth: Health tells a server this package brought down (Kill,
// Restart, Stop) from one that died or froze behind its back, and names
// the process and what happened to it.
func TestRedisHealth(t *testing.T) {
	needRedis(t)
	ctx := testContext(t)
	r := testRedis(ctx, t, RedisOptions{})
	healthy := func(when string) {
		t.Helper()
		if err := r.Health(); err != nil {
			t.Errorf("%s: Health = %v, want nil", when, err)
		}
	}
	down := func(when string, want ...string) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if err = r.Health(); err != nil {
				break
			}
		}
		if !errors.Is(err, ErrDown) {
			t.Fatalf("%s: Health = %v, want ErrDown", when, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Health = %q, lacks %q", when, err, w)
			}
		}
	}
	healthy("started")
	pid := r.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	down("after SIGSTOP", "stopped (SIGSTOP)", r.Addr())
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	healthy("after SIGCONT")
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	healthy("after Kill (planned)")
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	healthy("after Restart")
	if err := syscall.Kill(r.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	down("after a SIGKILL from outside", "killed by SIGKILL", r.Addr())
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	healthy("restarted after the outside SIGKILL")
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	healthy("after Stop")
}
