package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/internal/netlag"
	"github.com/idembench/idembench/internal/testenv"
)

// benchClient returns a client of the test server with poolSize
// connections (0: go-redis's default) for a benchmark. With IDEM_BENCH_RTT
// set it connects through a netlag proxy that adds that round-trip time,
// and the function it returns reports on a benchmark the nominal round
// trip (rtt-µs) and the one measured as PINGs through the proxy less
// direct PINGs (added-rtt-µs); without, that function does nothing.
func benchClient(b *testing.B, poolSize int) (*redis.Client, func(*testing.B)) {
	opt, err := redis.ParseURL(testenv.RedisURL(b))
	if err != nil {
		b.Fatal(err)
	}
	opt.PoolSize = poolSize
	rtt := testenv.BenchRTT(b)
	if rtt == 0 {
		client := redis.NewClient(opt)
		b.Cleanup(func() { _ = client.Close() })
		return client, func(*testing.B) {}
	}
	direct := *opt
	direct.PoolSize = 1
	opt.Addr = testenv.LagProxy(b, opt.Addr, rtt).Addr()
	client := redis.NewClient(opt)
	b.Cleanup(func() { _ = client.Close() })
	return client, func(b *testing.B) {
		ctx := context.Background()
		dc := redis.NewClient(&direct)
		defer dc.Close()
		added, err := netlag.AddedRTT(200,
			func() error { return dc.Ping(ctx).Err() },
			func() error { return client.Ping(ctx).Err() })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rtt)/float64(time.Microsecond), "rtt-µs")
		b.ReportMetric(float64(added)/float64(time.Microsecond), "added-rtt-µs")
	}
}
