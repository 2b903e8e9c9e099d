package testenv

import (
	"os"
	"testing"
	"time"

	"github.com/idembench/idembench/internal/netlag"
)

// BenchRTTEnv names the round-trip time that the Redis and PostgreSQL
// benchmarks add between client and server through a netlag proxy, as a Go
// duration: 250us (one zone), 500us, 1ms (across zones). Unset or 0: the
// client dials the server directly (loopback).
const BenchRTTEnv = "IDEM_BENCH_RTT"

// BenchRTT returns the round-trip time IDEM_BENCH_RTT asks for; 0 when it
// is unset. A value that is not a duration of 0 to 1s fails t.
func BenchRTT(t testing.TB) time.Duration {
	t.Helper()
	v := os.Getenv(BenchRTTEnv)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Second {
		t.Fatalf("%s=%q: want a duration from 0 to 1s, such as 500us", BenchRTTEnv, v)
	}
	return d
}

// LagProxy starts a netlag proxy that forwards to addr (host:port) adding
// rtt to every round trip, closed at t's cleanup.
func LagProxy(t testing.TB, addr string, rtt time.Duration) *netlag.Proxy {
	t.Helper()
	p, err := netlag.Start(addr, rtt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
