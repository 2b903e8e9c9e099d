package engines

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
	"github.com/idembench/idembench/workload/pgsink"
)

// RedisPrefix starts every Redis key of the reference engine's store.
const RedisPrefix = "idembench"

// PostgresTable is the reference engine's records table, apart from any
// application's.
const PostgresTable = pgsink.DefaultTable

// Pool sizes: every client may hold a connection.
const (
	redisMinPool = 64
	pgMinConns   = 32
)

// Reference returns the reference engine, harness.ReferenceEngine: package
// idem on memstore, redisstore or pgstore, with a transactional mode on
// PostgreSQL (pgstore.DoTx through pgsink.TxSink).
func Reference() harness.StoreFactory {
	return harness.StoreFactory{Name: harness.ReferenceEngine, Open: openReference, OpenTxSink: openTxSink, Purge: purgeRun}
}

func openReference(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
	switch env.Backend {
	case harness.Redis:
		return openRedis(ctx, env)
	case harness.Postgres:
		return openPostgres(ctx, env)
	case harness.DynamoDB:
		return openDynamo(ctx, env)
	}
	st := memstore.New(memstore.Options{Clock: env.Clock})
	return st, closerFunc(func() error { st.Close(); return nil }), nil
}

func openTxSink(ctx context.Context, env harness.Env) (workload.TxSink, io.Closer, error) {
	if env.Backend != harness.Postgres {
		return nil, nil, harness.ConfigError("sink tx (Postgres transactional mode) needs backend postgres")
	}
	s, err := pgsink.OpenTx(ctx, env.URL, pgsink.Options{Table: PostgresTable})
	if err != nil {
		return nil, nil, err
	}
	return s, s, nil
}

// openRedis connects to env.URL and checks that the server answers: a
// server that refuses the URL's password or database is a configuration
// error, one that does not answer an environment error. A
// server that may evict keys (maxmemory-policy other than noeviction) is
// used all the same, with a warning: the harness is there to show what that
// does.
func openRedis(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
	client, sopts, err := redisClient(env.URL)
	if err != nil {
		return nil, nil, harness.ConfigError("redis URL: %w", err)
	}
	m := &meter{what: "Redis INFO cpu (used_cpu_user + used_cpu_sys)"}
	client.AddHook(redisHook{m})
	pctx, cancel := context.WithTimeout(uncounted(ctx), 10*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, nil, redisOpenError(env.URL, err)
	}
	sopts.Prefix = RedisPrefix
	st, err := redisstore.New(client, sopts)
	if err != nil {
		client.Close()
		return nil, nil, harness.ConfigError("redis: %w", err)
	}
	if err := st.CheckConfig(pctx); err != nil {
		env.Warn("redis: " + err.Error())
	}
	m.cpu, m.noCPU = redisCPU(client)
	m.start(pctx)
	return newRedisRun(st, m), client, nil
}

// openPostgres connects to env.URL, checks the server answers, migrates
// the records table and starts the sweeper.
func openPostgres(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
	cfg, err := pgxpool.ParseConfig(env.URL)
	if err != nil {
		return nil, nil, harness.ConfigError("postgres URL: %w", err)
	}
	cfg.MaxConns = max(cfg.MaxConns, pgMinConns)
	m := &meter{what: "PostgreSQL pg_stat_statements total_exec_time (execution time, not only CPU)"}
	cfg.ConnConfig.Tracer = pgTracer{m}
	// pgxpool pings a connection idle for over a second before handing it
	// out (its default rule, kept): a round trip no tracer sees, so the
	// meter counts it here.
	cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
		ping := p.IdleDuration > time.Second
		if ping {
			m.count(ctx, 1, 1)
		}
		return ping
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(uncounted(ctx), 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, nil, postgresOpenError(env.URL, err)
	}
	st, err := pgstore.New(pool, pgstore.Options{Table: PostgresTable})
	if err != nil {
		pool.Close()
		return nil, nil, harness.ConfigError("postgres: %w", err)
	}
	if err := st.Migrate(pctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	// Rows of earlier runs expire after the engine's retention; the
	// sweeper deletes them while this run goes on.
	stop := st.StartSweeper(context.WithoutCancel(ctx))
	m.cpu, m.noCPU = pgCPU(pctx, pool)
	m.start(pctx)
	return newPGRun(st, m), closerFunc(func() error { stop(); pool.Close(); return nil }), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
