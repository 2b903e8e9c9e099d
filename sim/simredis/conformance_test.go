package simredis_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim/simtest"
	"github.com/redis/go-redis/v9"
)

// TestConformanceOnMiniredis runs the store conformance suite (and its
// batch suite) against the production Redis store on miniredis, on a
// manual clock (SetTime, with ClockTTL so key expiry follows it): every
// script of the store, the multi-key batch forms and WaitChange's probe
// included, must behave on miniredis as the suite requires of Redis.
// This is how docs/design/simulation.md can say the scripts run unchanged.
func TestConformanceOnMiniredis(t *testing.T) {
	if simtest.QuickForm() {
		t.Skip("the conformance suite on miniredis takes a while; not in -short or -race")
	}
	m := miniredis.NewMiniRedis()
	defer m.Close()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.SetTime(now)
	m.ClockTTL(true)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", Dialer: dialer(m), Protocol: 2, DisableIdentity: true})
	defer client.Close()
	var n atomic.Int64
	cfg := storetest.Config{
		New: func(t *testing.T) idem.Store {
			st, err := redisstore.New(client, redisstore.Options{Prefix: fmt.Sprintf("c%d", n.Add(1))})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		Advance: func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(d)
			m.SetTime(now)
		},
	}
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, cfg) })
	t.Run("BatchConformance", func(t *testing.T) { storetest.RunBatch(t, cfg) })
}

// dialer pipes every connection to m.
func dialer(m *miniredis.Miniredis) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) { return m.Dial() }
}
