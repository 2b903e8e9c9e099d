package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// newClient returns a client for the test Redis (IDEM_REDIS_URL), closed
// when t ends, or skips or fails t as internal/testenv decides.
func newClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	opt, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.RedisEnv, err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// uniquePrefix returns a key prefix no other test (in this or another
// package's test binary) uses, so tests can share one server.
func uniquePrefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e || strings.ContainsRune("{}*?[]\\", r) {
			return '_'
		}
		return r
	}, t.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return "t:" + name + ":" + hex.EncodeToString(b[:])
}

// newStore returns a Store on client with a unique prefix; opts.Prefix is
// replaced.
func newStore(t testing.TB, client redis.UniversalClient, opts Options) *Store {
	t.Helper()
	opts.Prefix = uniquePrefix(t)
	s, err := New(client, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { deletePrefix(t, client, opts.Prefix) })
	return s
}

// cleanPrefix returns a unique prefix whose keys are deleted when t ends.
func cleanPrefix(t testing.TB, client redis.UniversalClient) string {
	p := uniquePrefix(t)
	t.Cleanup(func() { deletePrefix(t, client, p) })
	return p
}

// deletePrefix deletes every key under prefix, fencing counters included,
// so tests leave nothing behind on a shared server.
func deletePrefix(t testing.TB, client redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		pipe := c.Pipeline()
		for iter.Next(ctx) {
			pipe.Unlink(ctx, iter.Val()) // one key per command: keys span slots
			if pipe.Len() >= 1000 {
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
		}
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, c)
	}
	if err != nil && !errors.Is(err, redis.ErrClosed) {
		t.Logf("cleanup of %s:*: %v", prefix, err)
	}
}

// ctxT returns a context that ends with the test or after 30 seconds.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustAcquire and mustRecord are the suite's: they fail the test unless
// Acquire grants a lease, or returns the existing record, and nothing else.
var (
	mustAcquire = storetest.MustAcquire
	mustRecord  = storetest.MustRecord
)

// waitGone polls until key has no record, failing t after timeout.
func waitGone(t testing.TB, s idem.Store, key string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := s.Get(ctxT(t), key)
		if errors.Is(err, idem.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %q still present after %v (last err %v)", key, timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func resp(body string) idem.Response {
	return idem.Response{Status: 200, Header: map[string][]string{"X-Test": {"a", "b"}}, Body: []byte(body)}
}

// waitLeaseExpired sleeps until l has expired by the (shared) host clock.
func waitLeaseExpired(t testing.TB, l *idem.Lease) {
	t.Helper()
	time.Sleep(time.Until(l.Expiry) + 30*time.Millisecond)
}

func idemToken(n uint64) idem.Token { return idem.Token(n) }
