//go:build linux

package servers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/internal/testenv"
)

// helperEnv makes the test binary act as a helper process that starts one
// server ("redis" or "postgres"), prints "READY pid port dir" and waits to be
// killed; see TestServersDieWithParent.
const helperEnv = "IDEM_SERVERS_TEST_HELPER"

func TestMain(m *testing.M) {
	if kind := os.Getenv(helperEnv); kind != "" {
		os.Exit(helperMain(kind))
	}
	goleak.VerifyTestMain(m)
}

// helperMain starts a server and blocks until stdin closes or a minute
// passes (the parent normally kills it first), then stops the server.
func helperMain(kind string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		s interface {
			PID() int
			Port() int
			Dir() string
			Stop() error
		}
		err error
	)
	switch kind {
	case "redis":
		s, err = StartRedis(ctx, RedisOptions{Persistence: AOFAlways})
	case "postgres":
		s, err = StartPostgres(ctx, PostgresOptions{})
	default:
		err = fmt.Errorf("unknown helper kind %q", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Stop()
	fmt.Printf("READY %d %d %s\n", s.PID(), s.Port(), s.Dir())
	stdin := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdin) }()
	select {
	case <-stdin:
	case <-ctx.Done():
	}
	return 0
}

// needRedis skips t when redis-server is missing, unless backends are
// required (IDEM_REQUIRE_BACKENDS=1), where it fails t.
func needRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing(t, "redis-server is not in PATH")
	}
}

// needPostgres is needRedis for initdb and postgres.
func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := findPostgres(""); err != nil {
		missing(t, err.Error())
	}
}

func missing(t *testing.T, why string) {
	t.Helper()
	if testenv.Required() {
		t.Fatalf("%s, but %s=1", why, testenv.RequireEnv)
	}
	t.Skipf("skipping: %s (set %s=1 to make this a failure)", why, testenv.RequireEnv)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testRedis starts a Redis server with opts, stopped when the test ends;
// a server that does not start ends the test.
func testRedis(ctx context.Context, t *testing.T, opts RedisOptions) *Redis {
	t.Helper()
	r, err := StartRedis(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	return r
}

// redisDo sends one command to addr and returns its reply.
func redisDo(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatalf("write to %s: %v", addr, err)
	}
	return readRESP(bufio.NewReader(c))
}

// assertGone checks that the server process, its group and every process
// working in serverDir no longer run, its port is free and, when dir is not
// empty, dir no longer exists. Process exit is polled for up to ten seconds.
func assertGone(t *testing.T, pid, port int, serverDir, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) || len(leftovers(pid, serverDir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("server process %d still alive, or processes %v of %s", pid, leftovers(pid, serverDir), serverDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	assertPortFree(t, port)
	if dir != "" {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dir %s still exists (stat: %v)", dir, err)
		}
	}
}

// restartable is a single server: Postgres or Redis.
type restartable interface {
	Restart(ctx context.Context) error
	Stop() error
	PID() int
	Port() int
	Dir() string
}

// checkRestart restarts s and checks that a new process runs.
func checkRestart(ctx context.Context, t *testing.T, s restartable) {
	t.Helper()
	pid := s.PID()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.PID() == pid {
		t.Errorf("PID unchanged after Restart: %d", pid)
	}
	if processAlive(pid) {
		t.Errorf("old process %d still alive after Restart", pid)
	}
}

// checkStop stops s, a server in a temporary directory, and checks that
// nothing of it is left, that a second Stop returns nil and that Restart
// then returns ErrStopped.
func checkStop(ctx context.Context, t *testing.T, s restartable) {
	t.Helper()
	dir, port, pid := s.Dir(), s.Port(), s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pid, port, dir, dir)
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop = %v, want nil", err)
	}
	if err := s.Restart(ctx); !errors.Is(err, ErrStopped) {
		t.Errorf("Restart after Stop = %v, want ErrStopped", err)
	}
}

// readyLine parses the helper's "READY pid port dir" line.
func readyLine(line string) (pid, port int, dir string, err error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "READY" {
		return 0, 0, "", fmt.Errorf("unexpected helper output %q", line)
	}
	pid, err1 := strconv.Atoi(f[1])
	port, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, "", err
	}
	return pid, port, f[3], nil
}

// assertPortFree fails t if something still listens on port of 127.0.0.1
// after a few seconds. The port counts as free when it can be bound or when a
// connection to it is refused: the servers' ports come from the ephemeral
// range, so a client socket of a test running in parallel may hold the number
// for a moment without anyone listening on it.
func assertPortFree(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := net.Listen("tcp", loopback(port))
		if err == nil {
			l.Close()
			return
		}
		c, derr := net.DialTimeout("tcp", loopback(port), time.Second)
		if derr != nil && errors.Is(derr, syscall.ECONNREFUSED) {
			return
		}
		if c != nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Errorf("port %d still in use: %v (a dial got %v)", port, err, derr)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
