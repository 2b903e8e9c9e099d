package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

// TestIdemctlCluster runs list (--stuck and --corrupt), stats, inspect,
// release and purge-corrupt through a redis-cluster:// URL against a private three-primary Redis Cluster, with
// keys spread over every primary.
func TestIdemctlCluster(t *testing.T) {
	addrs := startCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = client.Close() })
	st, err := redisstore.New(client, redisstore.Options{Prefix: "ctl"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 12
	for i := range n {
		l, _, err := st.Acquire(ctx, fmt.Sprintf("done-%d", i), fp, time.Minute)
		if err == nil {
			err = st.Complete(ctx, l, idem.Response{Status: 201, Body: []byte("ok")}, time.Hour)
		}
		if err == nil {
			_, _, err = st.Acquire(ctx, fmt.Sprintf("stuck-%d", i), fp, 20*time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	b := backend{name: "cluster", store: st, flags: []string{
		"--store", "redis-cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2], "--prefix", "ctl"}}
	code, out, errs := b.ctl(t, "stats")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("in_progress %d (stuck %d)", n, n)) || !strings.Contains(out, fmt.Sprintf("completed   %d", n)) {
		t.Fatalf("stats: %d %s %s", code, out, errs)
	}
	code, out, errs = b.ctl(t, "list", "--stuck")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d stuck keys", n)) {
		t.Fatalf("list --stuck: %d %s %s", code, out, errs)
	}
	rec, err := st.Get(ctx, "stuck-3")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs = b.ctl(t, "release", "stuck-3", "--token", fmt.Sprint(rec.Token+1)); code != exitRefused {
		t.Fatalf("release of a moved token: %d %s %s", code, out, errs)
	}
	if code, out, errs = b.ctl(t, "release", "stuck-3", "--token", fmt.Sprint(rec.Token)); code != 0 {
		t.Fatalf("release: %d %s %s", code, out, errs)
	}
	if code, _, _ = b.ctl(t, "inspect", "stuck-3"); code != exitNotFound {
		t.Fatalf("inspect after release: exit %d", code)
	}

	// Corrupt records on every primary: list --corrupt finds them all,
	// purge-corrupt deletes one with its digest.
	for i := range n {
		if err := client.Set(ctx, fmt.Sprintf("ctl:{junk-%d}", i), "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs = b.ctl(t, "--json", "list", "--corrupt")
	var recs []corruptJSON
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil || len(recs) != n {
		t.Fatalf("list --corrupt: exit %d, %v, %d records\nstdout: %s\nstderr: %s", code, err, len(recs), out, errs)
	}
	if code, out, errs = b.ctl(t, "purge-corrupt", recs[0].Key, "--confirm", recs[0].Digest); code != 0 {
		t.Fatalf("purge-corrupt: %d %s %s", code, out, errs)
	}
	if code, out, _ = b.ctl(t, "stats"); code != 0 || !strings.Contains(out, fmt.Sprintf("corrupt     %d", n-1)) {
		t.Fatalf("stats after purge-corrupt: %d %s", code, out)
	}
}

// startCluster starts a Redis Cluster of three primaries, each with a
// replica (chaos/servers), stops it when t ends, and returns the addresses
// of its nodes. The node timeout is long so that a loaded machine does not
// make a replica take over mid-test.
func startCluster(t *testing.T) []string {
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
