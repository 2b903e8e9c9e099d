//go:build linux

package servers

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// privateTempDir points os.TempDir at a new directory for the rest of t (so
// that whatever a start leaves behind is found there, apart from other
// tests and processes on the machine) and returns it. The directory is
// searchable by PostgreSQL's user.
func privateTempDir(t *testing.T) string {
	t.Helper()
	base := searchableTempDir(t, "servers-leftover-")
	t.Setenv("TMPDIR", base)
	return base
}

// searchableTempDir returns a new directory named pattern (as
// os.MkdirTemp), searchable by PostgreSQL's user so that a server's temp
// dir can live there, and removed at the end of t even if it fails.
func searchableTempDir(t *testing.T, pattern string) string {
	t.Helper()
	base, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// assertNothingUnder fails t unless, within ten seconds, no process works
// in base or below and base is empty.
func assertNothingUnder(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs := leftovers(0, base)
		ents, _ := os.ReadDir(base)
		if len(procs) == 0 && len(ents) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("left behind under %s: processes %v, entries %v", base, procs, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// topologyStarts are the three topologies, each started with opts that may
// be broken by bad.
var topologyStarts = []struct {
	name  string
	need  func(*testing.T)
	start func(ctx context.Context, bad bool) (Topology, error)
	// deadlines cut a start short at different stages.
	deadlines []time.Duration
}{
	{"sentinel", needRedis, func(ctx context.Context, bad bool) (Topology, error) {
		opts := RedisSentinelOptions{ReplicationLag: []time.Duration{time.Millisecond}}
		if bad {
			opts.Binary = "/nonexistent/redis-server"
		}
		return StartRedisSentinel(ctx, opts)
	}, []time.Duration{30 * time.Millisecond, 300 * time.Millisecond, time.Second}},
	{"cluster", needRedis, func(ctx context.Context, bad bool) (Topology, error) {
		opts := RedisClusterOptions{ReplicationLag: time.Millisecond}
		if bad {
			opts.Binary = "/nonexistent/redis-server"
		}
		return StartRedisCluster(ctx, opts)
	}, []time.Duration{30 * time.Millisecond, 300 * time.Millisecond}},
	{"postgres", needPostgres, func(ctx context.Context, bad bool) (Topology, error) {
		opts := PostgresReplicatedOptions{SynchronousCommit: "on", ReplicationLag: time.Millisecond}
		if bad {
			opts.BinDir = "/nonexistent"
		}
		return StartPostgresReplicated(ctx, opts)
	}, []time.Duration{time.Second, 3 * time.Second}},
}

// TestTopologiesLeaveNothing: a failed start (bad binary), a start cut
// short by its context at several stages, a Failover cut short by its
// context, and StopAll in the middle of a run leave no process, port or
// directory.
func TestTopologiesLeaveNothing(t *testing.T) {
	for _, tc := range topologyStarts {
		t.Run(tc.name, func(t *testing.T) {
			tc.need(t)
			base := privateTempDir(t)
			if topo, err := tc.start(testContext(t), true); err == nil {
				topo.Stop()
				t.Fatal("start with a missing binary succeeded")
			} else if !errors.Is(err, ErrNotFound) && tc.name == "postgres" {
				t.Errorf("start with a missing BinDir = %v, want ErrNotFound", err)
			}
			assertNothingUnder(t, base)

			for _, d := range tc.deadlines {
				ctx, cancel := context.WithTimeout(testContext(t), d)
				topo, err := tc.start(ctx, false)
				cancel()
				if err == nil { // the machine was fast: stop it normally
					t.Logf("start within %v succeeded", d)
					if err := topo.Stop(); err != nil {
						t.Fatal(err)
					}
				} else {
					t.Logf("start cut short after %v: %v", d, firstLine(err))
				}
				assertNothingUnder(t, base)
			}

			// A Failover whose context ends while it waits for the
			// promotion, then StopAll, as a CLI's signal handler calls it.
			topo, err := tc.start(testContext(t), false)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(testContext(t), 50*time.Millisecond)
			op, err := topo.Failover(ctx, "k")
			cancel()
			t.Logf("Failover with a 50ms context: %v (window return %d)", err, op.Return)
			if err := StopAll(); err != nil {
				t.Fatal(err)
			}
			assertNothingUnder(t, base)
			if err := topo.Stop(); err != nil {
				t.Errorf("Stop after StopAll = %v, want nil", err)
			}
			if _, err := topo.Failover(testContext(t), "k"); !errors.Is(err, ErrStopped) {
				t.Errorf("Failover after Stop = %v, want ErrStopped", err)
			}
		})
	}
}

func firstLine(err error) string {
	s := err.Error()
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
