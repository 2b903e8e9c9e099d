package multiproc

import (
	"context"
	"io"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/workload"
	"github.com/idembench/idembench/workload/pgsink"
	"github.com/idembench/idembench/workload/redissink"
)

// redisMinPool is the least connection pool size: every client may hold a
// connection.
const redisMinPool = 64

// openSink opens the effect sink of a worker process or of the
// coordinator, whose ledger lives in the backend so that an effect
// outlives the process that applied it: the engine's transactional sink on
// the store's server (env; its effects commit with the records), or a plain
// or fenced sink on the server at sinkURL. The returned function closes it.
func openSink(ctx context.Context, e harness.StoreFactory, name string, env harness.Env, sinkURL string) (workload.LedgerReader, func(), error) {
	fenced := name == workload.SinkFenced
	switch {
	case name == workload.SinkTx:
		s, c, err := e.OpenTxSink(ctx, env)
		if err != nil {
			return nil, nil, harness.EnvironmentError(err)
		}
		r, ok := s.(workload.LedgerReader)
		if !ok {
			closeQuietly(c)
			return nil, nil, harness.ConfigError("sink tx of engine %s cannot read its ledger back: it cannot run in worker processes", e.Name)
		}
		return r, func() { closeQuietly(c) }, nil
	case env.Backend == harness.Postgres:
		s, err := pgsink.Open(ctx, sinkURL, pgsink.Options{Fenced: fenced})
		if err != nil {
			return nil, nil, harness.EnvironmentError(err)
		}
		return s, func() { s.Close() }, nil
	}
	opt, err := redis.ParseURL(sinkURL)
	if err != nil {
		return nil, nil, harness.ConfigError("redis URL: %w", err)
	}
	opt.PoolSize = max(opt.PoolSize, redisMinPool)
	// No client-side retry: an apply whose reply was lost and that the
	// client sent again would be an effect applied twice.
	opt.MaxRetries = -1
	client := redis.NewClient(opt)
	return redissink.New(client, redissink.Options{Fenced: fenced}), func() { client.Close() }, nil
}

func closeQuietly(c io.Closer) {
	if c != nil {
		_ = c.Close()
	}
}
