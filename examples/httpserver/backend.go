package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
)

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

// checkStoreConfig asks a store that can tell (idem.ConfigChecker) whether
// its server can lose records silently (Redis evicting keys, PostgreSQL
// with synchronous_commit off). mode "refuse" returns that as an error,
// "warn" logs it, "off" does not ask. A check that could not be made is
// logged in every mode but off.
func checkStoreConfig(ctx context.Context, s idem.Store, mode string, warn func(format string, args ...any)) error {
	cc, ok := s.(idem.ConfigChecker)
	if !ok || mode == "off" {
		return nil
	}
	err := cc.CheckConfig(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, idem.ErrUnsafeConfig) && mode == "refuse":
		return fmt.Errorf("%w (start anyway with --config-check warn)", err)
	}
	warn("store configuration: %v", err)
	return nil
}

// openRedis opens the Redis store and checks that the server answers.
func openRedis(ctx context.Context, url string) (idem.Store, func(), error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("--redis-url: %w", err)
	}
	client := redis.NewClient(opt)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", opt.Addr, err)
	}
	s, err := redisstore.New(client, redisstore.Options{Prefix: "payments"})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return s, func() { client.Close() }, nil
}

// openPostgres opens the PostgreSQL store, migrates its schema and starts
// its sweeper.
func openPostgres(ctx context.Context, url string) (idem.Store, func(), error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("--postgres-url: %w", err)
	}
	s, err := pgstore.New(pool, pgstore.Options{Table: "payments_idem"})
	if err == nil {
		err = s.Migrate(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	stop := s.StartSweeper(ctx)
	return s, func() { stop(); pool.Close() }, nil
}
