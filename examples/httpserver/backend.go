package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// errNotWired is returned for a backend whose package is not on main yet.
var errNotWired = errors.New("backend not wired into this example yet")

// openStore returns the idempotency store --backend asks for and a function
// that closes it.
func openStore(ctx context.Context, backend, redisURL, postgresURL string) (idem.Store, func(), error) {
	switch backend {
	case "memory":
		s := memstore.New(memstore.Options{})
		return s, func() { s.Close() }, nil
	case "redis":
		if redisURL == "" {
			return nil, nil, errors.New("--backend redis needs --redis-url or IDEM_REDIS_URL")
		}
		return openRedis(ctx, redisURL)
	case "postgres":
		if postgresURL == "" {
			return nil, nil, errors.New("--backend postgres needs --postgres-url or IDEM_POSTGRES_URL")
		}
		return openPostgres(ctx, postgresURL)
	}
	return nil, nil, fmt.Errorf("unknown --backend %q (memory, redis or postgres)", backend)
}

// openRedis opens the Redis store.
//
// TODO(lead): wire backends/redisstore when it lands on main, roughly:
//
//	opt, err := redis.ParseURL(url)
//	if err != nil { return nil, nil, err }
//	client := redis.NewClient(opt)
//	if err := client.Ping(ctx).Err(); err != nil { client.Close(); return nil, nil, err }
//	return redisstore.New(client, redisstore.Options{}), func() { client.Close() }, nil
func openRedis(ctx context.Context, url string) (idem.Store, func(), error) {
	return nil, nil, fmt.Errorf("redis: %w (needs backends/redisstore)", errNotWired)
}

// openPostgres opens the PostgreSQL store and migrates its schema.
//
// TODO(lead): wire backends/pgstore when it lands on main, roughly:
//
//	pool, err := pgxpool.New(ctx, url)
//	if err != nil { return nil, nil, err }
//	s := pgstore.New(pool, pgstore.Options{})
//	if err := s.Migrate(ctx); err != nil { pool.Close(); return nil, nil, err }
//	return s, pool.Close, nil
func openPostgres(ctx context.Context, url string) (idem.Store, func(), error) {
	return nil, nil, fmt.Errorf("postgres: %w (needs backends/pgstore)", errNotWired)
}
