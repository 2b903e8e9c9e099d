package main

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
)

// Backend and engine names accepted by --backend and --engine.
const (
	backendMemory   = "memory"
	backendRedis    = "redis"
	backendPostgres = "postgres"
	engineIdem      = "idem"
	naivePrefix     = "naive/"
)

// engineNames lists every valid --engine value.
func engineNames() []string {
	names := []string{engineIdem}
	for _, n := range naive.Names() {
		names = append(names, naivePrefix+n)
	}
	return names
}

// openedStore is a store ready for a run.
type openedStore struct {
	store idem.Store
	// persistent stores keep keys across runs: keys get a per-run prefix.
	persistent bool
	// warning is a configuration problem the run goes on with, for the
	// user to read.
	warning string
	close   func()
	// pg and pool are set for the PostgreSQL backend (--sink tx runs on them).
	pg   *pgstore.Store
	pool *pgxpool.Pool
}

// openStore builds the store for --backend and --engine. A bad name is a
// usage error; a backend that cannot be reached is an environment error.
func openStore(ctx context.Context, backend, engine, redisURL, postgresURL string) (*openedStore, error) {
	if name, ok := strings.CutPrefix(engine, naivePrefix); ok {
		if backend != backendMemory {
			return nil, usageErr("--engine %s is an in-memory design: use --backend memory", engine)
		}
		st, err := naive.New(name, nil)
		if err != nil {
			return nil, usageErr("--engine: %v", err)
		}
		return &openedStore{store: st, close: func() {}}, nil
	}
	if engine != engineIdem {
		return nil, usageErr("--engine %q: want one of %s", engine, strings.Join(engineNames(), ", "))
	}
	switch backend {
	case backendMemory:
		st := memstore.New(memstore.Options{})
		return &openedStore{store: st, close: func() { st.Close() }}, nil
	case backendPostgres:
		return openPostgres(ctx, postgresURL)
	case backendRedis:
		return openRedis(ctx, redisURL)
	}
	return nil, usageErr("--backend %q: want memory, redis or postgres", backend)
}

// redisPrefix starts every Redis key the harness's store uses.
const redisPrefix = "idembench"

// redisMinPool is the least connection pool size: every client may hold a
// connection.
const redisMinPool = 64

// openRedis connects to url and checks that the server answers. A bad URL is
// a usage error, a server that does not answer an environment error. A
// server that may evict keys (maxmemory-policy other than noeviction) is
// used all the same, with a warning: the harness is there to show what that
// does.
func openRedis(ctx context.Context, url string) (*openedStore, error) {
	if url == "" {
		return nil, usageErr("--backend redis needs --redis-url or IDEM_REDIS_URL")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, usageErr("--redis-url: %v", err)
	}
	opt.PoolSize = max(opt.PoolSize, redisMinPool)
	client := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, envErr(fmt.Errorf("redis unreachable at %s: %w", opt.Addr, err))
	}
	st, err := redisstore.New(client, redisstore.Options{Prefix: redisPrefix})
	if err != nil {
		client.Close()
		return nil, usageErr("redis: %v", err)
	}
	o := &openedStore{store: st, persistent: true, close: func() { client.Close() }}
	if err := st.CheckConfig(pctx); err != nil {
		o.warning = "redis: " + err.Error()
	}
	return o, nil
}

// pgTable is the harness's own records table, apart from any application's.
const pgTable = "idembench_keys"

// pgMinConns is the least pool size: every client may hold a connection.
const pgMinConns = 32

// openPostgres connects to url, checks the server answers and migrates the
// harness's table. A bad URL is a usage error; a server that does not
// answer, or refuses the migration, is an environment error.
func openPostgres(ctx context.Context, url string) (*openedStore, error) {
	if url == "" {
		return nil, usageErr("--backend postgres needs --postgres-url or IDEM_POSTGRES_URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usageErr("--postgres-url: %v", err)
	}
	cfg.MaxConns = max(cfg.MaxConns, pgMinConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, envErr(fmt.Errorf("postgres: %w", err))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, envErr(fmt.Errorf("postgres unreachable at %s: %w", redactURL(url), err))
	}
	st, err := pgstore.New(pool, pgstore.Options{Table: pgTable})
	if err != nil {
		pool.Close()
		return nil, usageErr("postgres: %v", err)
	}
	if err := st.Migrate(pctx); err != nil {
		pool.Close()
		return nil, envErr(fmt.Errorf("postgres: migrate: %w", err))
	}
	// Rows of earlier runs expire after the engine's retention; the
	// sweeper deletes them while this run goes on.
	stop := st.StartSweeper(context.WithoutCancel(ctx))
	return &openedStore{store: st, persistent: true, close: func() { stop(); pool.Close() }, pg: st, pool: pool}, nil
}

// redactURL hides the password of a connection URL.
func redactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// describeBackend names the store for the history header.
func describeBackend(backend, engine string) string {
	if engine != engineIdem {
		return fmt.Sprintf("%s (%s)", engine, backend)
	}
	return backend
}
