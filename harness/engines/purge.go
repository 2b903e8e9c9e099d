package engines

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/workload/pgsink"
)

// What a run of the reference engine leaves on a server, besides what is
// kept by design: on Redis the records (RedisPrefix:{key}) and the effect
// ledgers of workload/redissink (RedisPrefix:ledger:{key}:f and :l); on
// PostgreSQL the rows of the records table, of its fence table and of the
// effects table of workload/pgsink. The per-slot fence counters on Redis
// (RedisPrefix:fence:{slot}) and the token sequence on PostgreSQL are kept:
// a fencing token must never repeat, across runs too.
var postgresRunTables = []struct{ table, column string }{
	{PostgresTable, "key"},
	{PostgresTable + "_fence", "effect_key"},
	{pgsink.EffectsTable, "key"},
}

// PurgeOptions select the runs Purge deletes.
type PurgeOptions struct {
	// Prefix selects the one run whose keys start with it; empty selects
	// by Before.
	Prefix string
	// Before selects the runs that started before it; zero selects every
	// run (with an empty Prefix).
	Before time.Time
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
}

// Purged is what Purge deleted (or, with DryRun, would delete).
type Purged struct {
	// Runs lists the run prefixes found, sorted.
	Runs []string
	// Items counts the Redis keys or PostgreSQL rows.
	Items int
}

// Purge deletes the data of the selected runs of the reference engine
// and of the harness's backend sinks from the server at url (backend
// redis or postgres). A key that no run made is never touched, nor are
// the fence counters and the token sequence.
func Purge(ctx context.Context, backend harness.Backend, url string, o PurgeOptions) (Purged, error) {
	sel := func(key string) (string, bool) {
		prefix, start, ok := harness.ParseRunPrefix(key)
		switch {
		case !ok:
			return "", false
		case o.Prefix != "":
			return prefix, prefix == o.Prefix
		}
		return prefix, o.Before.IsZero() || start.Before(o.Before)
	}
	switch backend {
	case harness.Redis:
		patterns := []string{RedisPrefix + ":*"}
		if o.Prefix != "" { // one run: scan its keys alone
			patterns = []string{RedisPrefix + ":{" + o.Prefix + "-*", RedisPrefix + ":ledger:{" + o.Prefix + "-*"}
		}
		return purgeRedis(ctx, url, patterns, sel, o.DryRun)
	case harness.Postgres:
		return purgePostgres(ctx, url, sel, o.DryRun)
	}
	return Purged{}, harness.ConfigError("backend %s keeps no data between runs", backend)
}

// purgeRun is the reference engine's harness.PurgeFunc.
func purgeRun(ctx context.Context, env harness.Env) error {
	if env.Backend == harness.DynamoDB {
		return purgeDynamo(ctx, env.URL, env.Prefix)
	}
	_, err := Purge(ctx, env.Backend, env.URL, PurgeOptions{Prefix: env.Prefix})
	return err
}

func purgeRedis(ctx context.Context, url string, patterns []string, sel func(string) (string, bool), dry bool) (Purged, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return Purged{}, harness.ConfigError("redis URL: %w", err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	runs := map[string]bool{}
	var n int
	var batch []string
	flush := func() error {
		if len(batch) == 0 || dry {
			batch = batch[:0]
			return nil
		}
		err := client.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for _, pattern := range patterns {
		if err := scanRedis(ctx, client, pattern, func(k string) error {
			rest := strings.TrimPrefix(k, RedisPrefix+":")
			if !strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, "ledger:{") {
				return nil // fence counters and anything else
			}
			prefix, ok := sel(rest[strings.IndexByte(rest, '{')+1:])
			if !ok {
				return nil
			}
			runs[prefix] = true
			n++
			if batch = append(batch, k); len(batch) >= 500 {
				return flush()
			}
			return nil
		}); err != nil {
			return Purged{}, err
		}
	}
	if err := flush(); err != nil {
		return Purged{}, fmt.Errorf("redis: delete: %w", err)
	}
	return Purged{Runs: sortedKeys(runs), Items: n}, nil
}

// scanRedis calls f with every key matching pattern.
func scanRedis(ctx context.Context, client *redis.Client, pattern string, f func(string) error) error {
	it := client.Scan(ctx, 0, pattern, 1000).Iterator()
	for it.Next(ctx) {
		if err := f(it.Val()); err != nil {
			return fmt.Errorf("redis: delete: %w", err)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("redis: scan: %w", err)
	}
	return nil
}

func purgePostgres(ctx context.Context, url string, sel func(string) (string, bool), dry bool) (Purged, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return Purged{}, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	runs := map[string]bool{}
	var n int
	for _, t := range postgresRunTables {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t.table).Scan(&exists); err != nil {
			return Purged{}, fmt.Errorf("postgres: %w", err)
		}
		if !exists {
			continue
		}
		q := `SELECT substring(` + t.column + ` from '^r[0-9a-z]+-[0-9a-z]+') AS p, count(*) FROM ` + t.table +
			` WHERE ` + t.column + ` ~ '^r[0-9a-z]+-[0-9a-z]+' GROUP BY p`
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return Purged{}, fmt.Errorf("postgres: %s: %w", t.table, err)
		}
		var picked []string
		for rows.Next() {
			var p string
			var c int
			if err := rows.Scan(&p, &c); err != nil {
				rows.Close()
				return Purged{}, fmt.Errorf("postgres: %s: %w", t.table, err)
			}
			if prefix, ok := sel(p); ok && prefix == p {
				picked, runs[p], n = append(picked, p), true, n+c
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return Purged{}, fmt.Errorf("postgres: %s: %w", t.table, err)
		}
		if dry || len(picked) == 0 {
			continue
		}
		del := `DELETE FROM ` + t.table + ` WHERE substring(` + t.column + ` from '^r[0-9a-z]+-[0-9a-z]+') = ANY($1)`
		if _, err := conn.Exec(ctx, del, picked); err != nil {
			return Purged{}, fmt.Errorf("postgres: %s: delete: %w", t.table, err)
		}
	}
	return Purged{Runs: sortedKeys(runs), Items: n}, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
