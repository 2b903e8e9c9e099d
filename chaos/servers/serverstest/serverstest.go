//go:build unix

// Package serverstest starts the servers of package servers for tests: it
// stops them when the test ends, and skips the test when a server is not
// installed, unless testenv.Required demands the backends.
package serverstest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/internal/testenv"
)

// RedisCluster starts a Redis Cluster of three primaries, each
// with a replica, for a test: it stops it when t ends and returns the
// addresses of its nodes. The node timeout is long (5s) so that a loaded
// machine does not make a replica take over mid-test. Without
// redis-server in PATH t is skipped, or fails when testenv.Required()
// demands the backends.
func RedisCluster(t testing.TB) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if testenv.Required() {
			t.Fatalf("redis-server required (%s=1) but not installed", testenv.RequireEnv)
		}
		t.Skip("redis-server not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := servers.StartRedisCluster(ctx, servers.RedisClusterOptions{NodeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c.Addrs()
}
