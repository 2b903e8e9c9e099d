package redisstore

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// redisBinaries returns the paths of redis-server and redis-cli, or skips t
// when they are not installed, unless IDEM_REQUIRE_BACKENDS=1 demands them.
func redisBinaries(t *testing.T) (server, cli string) {
	t.Helper()
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		if testenv.Required() {
			t.Fatalf("redis-server/redis-cli required (%s=1) but not installed", testenv.RequireEnv)
		}
		t.Skip("redis-server or redis-cli not installed")
	}
	return server, cli
}

// freePort returns a loopback port that is free now, and whose cluster bus
// port (port+10000) is free too.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free port pair found")
	return 0
}

// startServer runs redis-server on a free loopback port with no
// persistence and the extra arguments, stops it by PID when t ends, and
// returns its address once it answers PING.
func startServer(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	bin, _ := redisBinaries(t)
	port := strconv.Itoa(freePort(t))
	args := append([]string{
		"--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction",
		"--logfile", filepath.Join(dir, "redis-"+port+".log"),
	}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		// Stop exactly the process started here, by its PID.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("stopped redis-server pid %d", pid)
	})
	addr := "127.0.0.1:" + port
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server pid %d on %s did not answer within 10s", pid, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}

// startCluster starts a Redis Cluster of three primaries, each with a
// replica (chaos/servers), stops it when t ends, and returns the addresses
// of its nodes. The node timeout is long so that a loaded machine does not
// make a replica take over mid-test.
func startCluster(t *testing.T) []string {
	t.Helper()
	redisBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := servers.StartRedisCluster(ctx, servers.RedisClusterOptions{NodeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c.Addrs()
}
