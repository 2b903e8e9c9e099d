package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// A backendLedger is an effect sink that lives in the run's backend, so an
// effect survives the death of the worker process that applied it. Every
// applied effect is one entry (key, execution, token, time, response);
// with fencing an effect whose token is lower than the highest applied for
// its key is rejected and leaves no entry. After the run the coordinator
// reads the entries back: the backend is the whole truth about which
// effects happened.
type backendLedger interface {
	workload.Sink
	ledgerReader
}

// ledgerReader reads a backend ledger back after the run.
type ledgerReader interface {
	// entries returns the applied effects of keys (Redis) or of every key
	// starting with prefix (PostgreSQL), with their apply times.
	entries(ctx context.Context, prefix string, keys []string) ([]ledgerEntry, error)
}

// ledgerEntry is one applied effect as the backend ledger holds it.
type ledgerEntry struct {
	Key    string `json:"k"`
	Exec   string `json:"e"`
	Token  uint64 `json:"t"`
	At     int64  `json:"at"` // history.Now() when applied
	Status int    `json:"s"`
	Body   []byte `json:"b"`
}

// ---- Redis ----

// redisLedger keeps, per key, a fence hash (highest applied token) and a
// list of applied entries, both under the key's hash tag, changed by one
// script: check and append are one atomic step.
type redisLedger struct {
	client redis.UniversalClient
	fenced bool
	ttl    time.Duration
}

var redisLedgerScript = redis.NewScript(`
local last = redis.call('HGET', KEYS[1], 't')
if ARGV[1] == '1' and last and tonumber(last) > tonumber(ARGV[2]) then return 0 end
if not last or tonumber(last) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 't', ARGV[2]) end
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
`)

func redisLedgerKeys(key string) (fence, list string) {
	base := redisPrefix + ":ledger:{" + key + "}"
	return base + ":f", base + ":l"
}

func (l *redisLedger) Name() string {
	if l.fenced {
		return workload.SinkFenced
	}
	return workload.SinkPlain
}

// fenceArg is the scripts' fencing switch: "1" for a fenced ledger.
func (l *redisLedger) fenceArg() string {
	if l.fenced {
		return "1"
	}
	return "0"
}

// Ledger returns an empty ledger: the entries are read after the run.
func (l *redisLedger) Ledger() *workload.Ledger { return workload.NewLedger() }

func (l *redisLedger) Apply(ctx context.Context, e workload.Effect) (bool, error) {
	ent, err := json.Marshal(ledgerEntry{Key: e.Key, Exec: e.Exec, Token: uint64(e.Token), At: history.Now(), Status: e.Response.Status, Body: e.Response.Body})
	if err != nil {
		return false, err
	}
	f, ls := redisLedgerKeys(e.Key)
	n, err := redisLedgerScript.Run(ctx, l.client, []string{f, ls}, l.fenceArg(), strconv.FormatUint(uint64(e.Token), 10), ent, l.ttl.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("redis ledger: %w", err)
	}
	return n == 1, nil
}

// redisRecoverScript raises the fence of KEYS[1] to ARGV[1] (when ARGV[2]
// is '1': a fenced ledger) and returns the first entry of the list KEYS[2],
// or false, in one atomic step. ARGV[3] is the TTL in milliseconds.
var redisRecoverScript = redis.NewScript(`
if ARGV[2] == '1' then
  local last = redis.call('HGET', KEYS[1], 't')
  if not last or tonumber(last) < tonumber(ARGV[1]) then
    redis.call('HSET', KEYS[1], 't', ARGV[1])
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
end
return redis.call('LINDEX', KEYS[2], 0)
`)

// Recover raises key's fence to token and looks up the first applied effect
// of key, in one script ("fence, then look": a stale holder applying after
// the look is rejected).
func (l *redisLedger) Recover(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	f, ls := redisLedgerKeys(key)
	s, err := redisRecoverScript.Run(ctx, l.client, []string{f, ls}, strconv.FormatUint(uint64(token), 10), l.fenceArg(), l.ttl.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return idem.Response{}, false, nil
	}
	if err != nil {
		return idem.Response{}, false, fmt.Errorf("redis ledger: %w", err)
	}
	var e ledgerEntry
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return idem.Response{}, false, fmt.Errorf("redis ledger: %w", err)
	}
	return idem.Response{Status: e.Status, Body: e.Body}, true, nil
}

func (l *redisLedger) entries(ctx context.Context, _ string, keys []string) ([]ledgerEntry, error) {
	var out []ledgerEntry
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 500)]
		keys = keys[len(batch):]
		pipe := l.client.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(batch))
		for i, k := range batch {
			_, ls := redisLedgerKeys(k)
			cmds[i] = pipe.LRange(ctx, ls, 0, -1)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redis ledger: read: %w", err)
		}
		for _, c := range cmds {
			for _, s := range c.Val() {
				var e ledgerEntry
				if err := json.Unmarshal([]byte(s), &e); err != nil {
					return nil, fmt.Errorf("redis ledger: %w", err)
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// ---- PostgreSQL ----

// pgLedger appends applied effects to pgEffectsTable. With fencing the
// token goes through pgstore.ApplyFenced first, in the same transaction.
type pgLedger struct {
	st     *pgstore.Store
	pool   *pgxpool.Pool
	fenced bool
}

const pgInsertEffect = `INSERT INTO ` + pgEffectsTable + ` (key, exec, token, status, body, at) VALUES ($1, $2, $3, $4, $5, $6)`

func newPgLedger(ctx context.Context, st *pgstore.Store, pool *pgxpool.Pool, fenced bool) (*pgLedger, error) {
	if err := migrateEffects(ctx, pool); err != nil {
		return nil, err
	}
	return &pgLedger{st: st, pool: pool, fenced: fenced}, nil
}

func migrateEffects(ctx context.Context, pool *pgxpool.Pool) error {
	for _, q := range []string{pgEffectsDDL, `ALTER TABLE ` + pgEffectsTable + ` ADD COLUMN IF NOT EXISTS at bigint NOT NULL DEFAULT 0`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgres: migrate %s: %w", pgEffectsTable, err)
		}
	}
	return nil
}

func (l *pgLedger) Name() string {
	if l.fenced {
		return workload.SinkFenced
	}
	return workload.SinkPlain
}

func (l *pgLedger) Ledger() *workload.Ledger { return workload.NewLedger() }

func (l *pgLedger) Apply(ctx context.Context, e workload.Effect) (applied bool, err error) {
	args := []any{e.Key, e.Exec, int64(e.Token), e.Response.Status, e.Response.Body, history.Now()}
	if !l.fenced {
		if _, err := l.pool.Exec(ctx, pgInsertEffect, args...); err != nil {
			return false, fmt.Errorf("postgres ledger: %w", err)
		}
		return true, nil
	}
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		ok, err := l.st.ApplyFenced(ctx, tx, e.Key, e.Token)
		if err != nil || !ok {
			return err
		}
		if _, err := tx.Exec(ctx, pgInsertEffect, args...); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("postgres ledger: %w", err)
	}
	return applied, nil
}

// Recover looks up the first applied effect of key. With fencing it first
// raises the fence to token in a transaction of its own ("fence, then
// look"): a holder stopped inside its apply transaction holds the fence row's
// lock, so this waits until that holder commits (its effect is then found) or
// rolls back; a holder that has not reached its apply yet is rejected later
// by the raised fence. Looking first would miss an uncommitted apply and run
// the effect a second time.
func (l *pgLedger) Recover(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	if l.fenced {
		err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
			_, err := l.st.ApplyFenced(ctx, tx, key, token)
			return err
		})
		if err != nil {
			return idem.Response{}, false, fmt.Errorf("postgres ledger: raise fence: %w", err)
		}
	}
	var r idem.Response
	err := l.pool.QueryRow(ctx, `SELECT status, body FROM `+pgEffectsTable+` WHERE key = $1 ORDER BY at LIMIT 1`, key).Scan(&r.Status, &r.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("postgres ledger: %w", err)
	}
	return r, true, nil
}

func (l *pgLedger) entries(ctx context.Context, prefix string, _ []string) ([]ledgerEntry, error) {
	return pgEntries(ctx, l.pool, prefix)
}

func pgEntries(ctx context.Context, pool *pgxpool.Pool, prefix string) ([]ledgerEntry, error) {
	rows, err := pool.Query(ctx, `SELECT key, exec, token, at, status, body FROM `+pgEffectsTable+` WHERE starts_with(key, $1) ORDER BY at`, prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: read: %w", err)
	}
	defer rows.Close()
	var out []ledgerEntry
	for rows.Next() {
		var e ledgerEntry
		var tok int64
		if err := rows.Scan(&e.Key, &e.Exec, &tok, &e.At, &e.Status, &e.Body); err != nil {
			return nil, fmt.Errorf("postgres ledger: read: %w", err)
		}
		e.Token = uint64(tok)
		out = append(out, e)
	}
	return out, rows.Err()
}
