package pgstore

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/internal/netlag"
	"github.com/idembench/idembench/internal/testenv"
)

// benchStore returns a migrated Store on a pool of 32 connections for a
// benchmark. With IDEM_BENCH_RTT set the pool connects through a netlag
// proxy that adds that round-trip time, and the function it returns
// reports on a benchmark the nominal round trip (rtt-µs) and the one
// measured as pings through the proxy less direct pings (added-rtt-µs);
// without, that function does nothing.
func benchStore(b *testing.B, opts Options) (*Store, func(*testing.B)) {
	rtt := testenv.BenchRTT(b)
	if rtt == 0 {
		return newStore(b, opts), func(*testing.B) {}
	}
	url := testenv.PostgresURL(b)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 32
	target := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	p := testenv.LagProxy(b, target, rtt)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", uint16(p.Port())
	cfg.ConnConfig.Fallbacks = nil
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return newStoreOn(b, pool, opts), func(b *testing.B) {
		ctx := context.Background()
		dc, err := pgx.Connect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer dc.Close(ctx)
		pc, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer pc.Release()
		added, err := netlag.AddedRTT(200,
			func() error { return dc.Ping(ctx) },
			func() error { return pc.Ping(ctx) })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rtt)/float64(time.Microsecond), "rtt-µs")
		b.ReportMetric(float64(added)/float64(time.Microsecond), "added-rtt-µs")
	}
}
