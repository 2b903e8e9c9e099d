package engines

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
)

// The outcomes a Do call's cost is counted under, from what its claim
// found: a new or taken-over record (the execution and its outcome write
// and heartbeats count with it), a finished record (replay), or a live
// one (conflict, with the polls of a conflict wait).
const (
	outcomeFirst    = "first execution"
	outcomeReplay   = "replay"
	outcomeConflict = "conflict"
)

var outcomeNames = [...]string{outcomeFirst, outcomeReplay, outcomeConflict}

// tally counts requests and round trips.
type tally struct{ requests, roundTrips atomic.Int64 }

func (t *tally) add(requests, roundTrips int64) {
	t.requests.Add(requests)
	t.roundTrips.Add(roundTrips)
}

// meter counts what a client sends, as the client library reports it
// (a go-redis hook, a pgx tracer): in total, and per outcome for the
// store calls that carry an outcome in their context (callOutcome).
// Batches (DoBatch, coalescing) count in the total only.
type meter struct {
	total    tally
	outcomes [len(outcomeNames)]tally
	calls    [len(outcomeNames)]atomic.Int64
	// cpu reads the server's cumulative CPU seconds; nil when the server
	// does not expose them, with noCPU saying why.
	cpu   func(context.Context) (float64, error)
	cpu0  float64
	noCPU string
	what  string // the CPU figure's source
}

type outcomeKey struct{}

// uncountedKey marks a context whose requests the meter leaves out: the
// checks of opening the store and the meter's own reads.
type uncountedKey struct{}

func uncounted(ctx context.Context) context.Context {
	return context.WithValue(ctx, uncountedKey{}, true)
}

// call is what one store call sent, filed under outcome (-1: not known
// yet; the claim's own requests wait in pending until it is).
type call struct {
	outcome int
	pending tally
}

// count adds one exchange of requests in roundTrips round trips.
func (m *meter) count(ctx context.Context, requests, roundTrips int64) {
	if ctx.Value(uncountedKey{}) != nil {
		return
	}
	m.total.add(requests, roundTrips)
	if c, ok := ctx.Value(outcomeKey{}).(*call); ok {
		if c.outcome < 0 {
			c.pending.add(requests, roundTrips)
		} else {
			m.outcomes[c.outcome].add(requests, roundTrips)
		}
	}
}

// start reads the server's CPU counter, the zero of the run's figure.
func (m *meter) start(ctx context.Context) {
	if m.cpu == nil {
		return
	}
	v, err := m.cpu(uncounted(ctx))
	if err != nil {
		m.cpu, m.noCPU = nil, "n/a: "+err.Error()
		return
	}
	m.cpu0 = v
}

// usage returns the counts so far, with the server CPU used since start.
func (m *meter) usage() harness.StoreUsage {
	u := harness.StoreUsage{Requests: m.total.requests.Load(), RoundTrips: m.total.roundTrips.Load(), ServerCPU: m.noCPU}
	for i, name := range outcomeNames {
		u.Outcomes = append(u.Outcomes, harness.OutcomeUsage{Outcome: name, Calls: m.calls[i].Load(),
			Requests: m.outcomes[i].requests.Load(), RoundTrips: m.outcomes[i].roundTrips.Load()})
	}
	if m.cpu != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if v, err := m.cpu(uncounted(ctx)); err != nil {
			u.ServerCPU = "n/a: " + err.Error()
		} else {
			u.ServerCPUSeconds, u.ServerCPU = v-m.cpu0, m.what
		}
	}
	return u
}

// acquire runs a claim with a context that collects its requests, then
// files them (and the Do call) under the outcome the claim found.
func (m *meter) acquire(ctx context.Context, f func(context.Context) (*idem.Lease, *idem.Record, error)) (*idem.Lease, *idem.Record, error) {
	c := &call{outcome: -1}
	l, rec, err := f(context.WithValue(ctx, outcomeKey{}, c))
	o := -1
	switch {
	case l != nil:
		o = 0
	case rec != nil && rec.Status == idem.StatusInProgress, errors.Is(err, idem.ErrInProgress):
		o = 2
	case rec != nil:
		o = 1
	}
	if o >= 0 {
		m.calls[o].Add(1)
		m.outcomes[o].add(c.pending.requests.Load(), c.pending.roundTrips.Load())
	}
	return l, rec, err
}

// in returns ctx for a store call whose requests count under outcome o.
func in(ctx context.Context, o int) context.Context {
	return context.WithValue(ctx, outcomeKey{}, &call{outcome: o})
}

// redisHook counts every command as a request and every command or
// pipeline as one round trip.
type redisHook struct{ m *meter }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.m.count(ctx, 1, 1)
		return next(ctx, cmd)
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.m.count(ctx, int64(len(cmds)), 1)
		return next(ctx, cmds)
	}
}

// redisCPU returns a reader of the Redis server's CPU seconds (user +
// system, INFO cpu) when client talks to one server.
func redisCPU(client redis.UniversalClient) (func(context.Context) (float64, error), string) {
	c, ok := client.(*redis.Client)
	if !ok {
		return nil, "n/a: a cluster's or Sentinel's client has no single server"
	}
	return func(ctx context.Context) (float64, error) {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, err
		}
		var sum float64
		n := 0
		for _, line := range strings.Split(info, "\r\n") {
			name, val, _ := strings.Cut(line, ":")
			if name == "used_cpu_sys" || name == "used_cpu_user" {
				v, err := strconv.ParseFloat(val, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO cpu %s: %w", line, err)
				}
				sum += v
				n++
			}
		}
		if n != 2 {
			return 0, errors.New("INFO cpu has no used_cpu_sys and used_cpu_user")
		}
		return sum, nil
	}, ""
}

// pgTracer counts every query as one request in one round trip, a batch
// as its queries in one round trip, and a statement preparation as one of
// each.
type pgTracer struct{ m *meter }

func (t pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.m.count(ctx, 1, 1)
	return ctx
}

func (pgTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t pgTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.m.count(ctx, 0, 1)
	return ctx
}

func (t pgTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchQueryData) {
	t.m.count(ctx, 1, 0)
}

func (pgTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (t pgTracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	t.m.count(ctx, 1, 1)
	return ctx
}

func (pgTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// pgCPU returns a reader of the execution time of the current database's
// statements (pg_stat_statements' total_exec_time, in seconds), or why
// there is none.
func pgCPU(ctx context.Context, pool *pgxpool.Pool) (func(context.Context) (float64, error), string) {
	read := func(ctx context.Context) (float64, error) {
		var ms float64
		err := pool.QueryRow(ctx, `SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&ms)
		return ms / 1000, err
	}
	ctx = uncounted(ctx)
	if _, err := read(ctx); err != nil {
		var loaded bool
		_ = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&loaded)
		if !loaded {
			return nil, "n/a: the pg_stat_statements extension is not created in this database"
		}
		return nil, "n/a: pg_stat_statements is not loaded (shared_preload_libraries)"
	}
	return read, ""
}

// redisRun is the reference engine's Redis store with its usage counted,
// and pgRun its PostgreSQL store. Each embeds metered, whose methods file
// the requests of a Do's store calls under its outcome, and the store one
// level deeper (redisStore, pgStore): Go promotes the shallower of two
// methods of one name, so metered's replace the store's, while every other
// capability of the store (BatchStore, Sweeper, PoolSizer, ...) is still
// promoted.
type (
	redisRun struct {
		metered
		redisStore
	}
	pgRun struct {
		metered
		pgStore
	}
	redisStore struct{ *redisstore.Store }
	pgStore    struct{ *pgstore.Store }
)

func newRedisRun(st *redisstore.Store, m *meter) redisRun {
	return redisRun{metered{st, m}, redisStore{st}}
}

func newPGRun(st *pgstore.Store, m *meter) pgRun {
	return pgRun{metered{st, m}, pgStore{st}}
}

var (
	_ harness.UsageReporter = redisRun{}
	_ harness.UsageReporter = pgRun{}
	_ idem.BatchStore       = redisRun{}
	_ idem.BatchStore       = pgRun{}
	_ idem.Waiter           = redisRun{}
	_ idem.Waiter           = pgRun{}
	_ idem.PoolSizer        = redisRun{}
	_ idem.Sweeper          = pgRun{}
)

// waitingStore is a store that can wait for a change to a key.
type waitingStore interface {
	idem.Store
	idem.Waiter
}

// metered counts the usage of a store's calls with m.
type metered struct {
	s waitingStore
	m *meter
}

// RunUsage implements harness.UsageReporter.
func (r metered) RunUsage() harness.StoreUsage { return r.m.usage() }

// The store calls of a Do after its claim: heartbeats and the outcome
// write belong to a first execution, reads (the conflict wait's polls)
// and waits for a change to a conflict.

func (r metered) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	return r.m.acquire(ctx, func(ctx context.Context) (*idem.Lease, *idem.Record, error) {
		return r.s.Acquire(ctx, key, fp, ttl)
	})
}

func (r metered) Heartbeat(ctx context.Context, l *idem.Lease, ttl time.Duration) error {
	return r.s.Heartbeat(in(ctx, 0), l, ttl)
}

func (r metered) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return r.s.Complete(in(ctx, 0), l, resp, retention)
}

func (r metered) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return r.s.Fail(in(ctx, 0), l, resp, retention)
}

func (r metered) Release(ctx context.Context, l *idem.Lease) error {
	return r.s.Release(in(ctx, 0), l)
}

func (r metered) Get(ctx context.Context, key string) (*idem.Record, error) {
	return r.s.Get(in(ctx, 2), key)
}

func (r metered) WaitChange(ctx context.Context, key string) error {
	return r.s.WaitChange(in(ctx, 2), key)
}
