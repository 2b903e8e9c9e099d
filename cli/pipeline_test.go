package cli

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/internal/testenv"
)

// Tests of issue #24, "one run pipeline".

// TestBackendDiesMidRun: a private redis-server the test started on a free
// loopback port, killed with SIGKILL in the middle of a run by no fault of
// the run's plan, exits 5 (environment) and names the server; it is not a
// safety violation (exit 1, I6), and the message does not send the user to
// docker compose (the server was up).
func TestBackendDiesMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis server")
	}
	r, err := servers.StartRedis(t.Context(), servers.RedisOptions{})
	if errors.Is(err, servers.ErrNotFound) && !testenv.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	kill := time.AfterFunc(700*time.Millisecond, func() { _ = syscall.Kill(r.PID(), syscall.SIGKILL) })
	defer kill.Stop()
	res := runCLI(t, "run", "--backend", "redis", "--redis-url", r.URL(), "--scenario", "duplicates", "--duration", "2s",
		"--seed", "3", "--no-save", "--no-progress")
	if res.code != exitEnvironment {
		t.Fatalf("exit %d, want %d\n%s%s", res.code, exitEnvironment, res.stdout, res.err)
	}
	for _, want := range []string{"backend died during the run", r.URL()} {
		if !strings.Contains(res.err, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.err)
		}
	}
	if strings.Contains(res.err, "docker compose") {
		t.Errorf("the hint sends the user to docker compose for a server that was up:\n%s", res.err)
	}
}
