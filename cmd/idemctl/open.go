package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
)

// openStore opens the store of --store and checks that it answers.
// go-redis's own log lines (a pool that failed to dial, retried) are
// silenced: the error idemctl prints says it once.
func openStore(ctx context.Context, g globals) (idem.Store, func(), error) {
	redis.SetLogger(&logging.VoidLogger{})
	switch {
	case strings.HasPrefix(g.store, "redis-cluster://"):
		opt, err := redis.ParseClusterURL("redis://" + strings.TrimPrefix(g.store, "redis-cluster://"))
		if err != nil {
			return nil, nil, fmt.Errorf("--store: %w", err)
		}
		return openRedis(ctx, redis.NewClusterClient(opt), g.prefix)
	case strings.HasPrefix(g.store, "redis://"), strings.HasPrefix(g.store, "rediss://"):
		opt, err := redis.ParseURL(g.store)
		if err != nil {
			return nil, nil, fmt.Errorf("--store: %w", err)
		}
		return openRedis(ctx, redis.NewClient(opt), g.prefix)
	case strings.HasPrefix(g.store, "postgres://"), strings.HasPrefix(g.store, "postgresql://"):
		pool, err := pgxpool.New(ctx, g.store)
		if err != nil {
			return nil, nil, fmt.Errorf("--store: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("postgres: %w", err)
		}
		s, err := pgstore.New(pool, pgstore.Options{Table: g.table, Schema: g.schema})
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return s, pool.Close, nil
	}
	return nil, nil, fmt.Errorf("--store %q: want redis://, rediss://, redis-cluster:// or postgres://", g.store)
}

func openRedis(ctx context.Context, client redis.UniversalClient, prefix string) (idem.Store, func(), error) {
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	s, err := redisstore.New(client, redisstore.Options{Prefix: prefix})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return s, func() { _ = client.Close() }, nil
}
