//go:build linux

package servers

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRedisRestartPersistence(t *testing.T) {
	needRedis(t)
	tests := []struct {
		persistence Persistence
		wantKept    bool
	}{
		{None, false},
		{AOFAlways, true},
	}
	for _, tc := range tests {
		t.Run(tc.persistence.String(), func(t *testing.T) {
			ctx := testContext(t)
			r := testRedis(ctx, t, RedisOptions{Persistence: tc.persistence})
			if want := "redis://" + r.Addr() + "/0"; r.URL() != want {
				t.Errorf("URL() = %q, want %q", r.URL(), want)
			}
			if got, err := redisDo(t, r.Addr(), "SET", "k", "v"); err != nil || got != "OK" {
				t.Fatalf("SET = %q, %v", got, err)
			}
			checkRestart(ctx, t, r)
			got, err := redisDo(t, r.Addr(), "GET", "k")
			switch {
			case tc.wantKept && (err != nil || got != "v"):
				t.Errorf("after crash GET k = %q, %v; want v (AOF always keeps acknowledged writes)", got, err)
			case !tc.wantKept && !errors.Is(err, errNilReply):
				t.Errorf("after crash GET k = %q, %v; want nil (no persistence)", got, err)
			}
			checkStop(ctx, t, r)
		})
	}
}

func TestRedisGivenPortAndDir(t *testing.T) {
	needRedis(t)
	ctx := testContext(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "redis")
	r := testRedis(ctx, t, RedisOptions{Persistence: AOFAlways, Port: port, Dir: dir})
	if r.Port() != port || r.Dir() != dir {
		t.Errorf("Port, Dir = %d, %s; want %d, %s", r.Port(), r.Dir(), port, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir")); err != nil {
		t.Errorf("no AOF directory in %s: %v", dir, err)
	}

	// A second server on the same port fails and leaves nothing behind.
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"redis-*"))
	if r2, err := StartRedis(ctx, RedisOptions{Port: port}); err == nil {
		r2.Stop()
		t.Fatal("second StartRedis on a taken port succeeded")
	} else {
		t.Logf("second StartRedis on a taken port: %v", err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"redis-*"))
	if len(after) > len(before) {
		t.Errorf("failed start left a temp dir: before %v, after %v", before, after)
	}

	pid := r.PID()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pid, port, dir, "")
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Stop removed the caller's dir %s: %v", dir, err)
	}
}

func TestStartRedisErrors(t *testing.T) {
	ctx := testContext(t)
	if _, err := StartRedis(ctx, RedisOptions{Binary: filepath.Join(t.TempDir(), "no-such-redis")}); err == nil {
		t.Error("StartRedis with a missing binary succeeded")
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := StartRedis(ctx, RedisOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("StartRedis without redis-server in PATH = %v, want ErrNotFound", err)
	}
	if _, err := StartRedis(ctx, RedisOptions{Persistence: 7}); err == nil {
		t.Error("StartRedis with an unknown persistence succeeded")
	}
	if _, err := StartRedis(ctx, RedisOptions{Port: 70000}); err == nil {
		t.Error("StartRedis with port 70000 succeeded")
	}
}

func TestStopAll(t *testing.T) {
	needRedis(t)
	ctx := testContext(t)
	var rs []*Redis
	for range 2 {
		r := testRedis(ctx, t, RedisOptions{})
		rs = append(rs, r)
	}
	if err := StopAll(); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		assertGone(t, r.PID(), r.Port(), r.Dir(), r.Dir())
		if err := r.Stop(); err != nil {
			t.Errorf("Stop after StopAll = %v, want nil", err)
		}
	}
	if err := StopAll(); err != nil {
		t.Errorf("second StopAll = %v", err)
	}
}
