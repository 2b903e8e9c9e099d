package redisstore

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/idem"
)

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)

	c := redis.NewClient(&redis.Options{Addr: startServer(t, dir)})
	defer c.Close()
	s := newStore(t, c, Options{})
	if err := s.CheckConfig(ctx); err != nil {
		t.Fatalf("noeviction: %v", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckConfig(ctx); !errors.Is(err, ErrEvictionPolicy) || !errors.Is(err, idem.ErrUnsafeConfig) {
		t.Fatalf("volatile-lru: %v, want ErrEvictionPolicy and idem.ErrUnsafeConfig", err)
	}

	// Managed services often disable CONFIG: the check must say it could
	// not check, not that all is well.
	locked := redis.NewClient(&redis.Options{Addr: startServer(t, dir, "--rename-command", "CONFIG", "")})
	defer locked.Close()
	s = newStore(t, locked, Options{})
	if err := s.CheckConfig(ctx); !errors.Is(err, ErrConfigUnchecked) {
		t.Fatalf("CONFIG disabled: %v, want ErrConfigUnchecked", err)
	}
}
