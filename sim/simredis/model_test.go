package simredis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/sim/simredis"
)

// TestMiniredisModel measures, inside a synctest bubble, what the
// simulation's in-process Redis models and what it does not; each fact
// is a line of docs/design/simulation.md ("Redis in the simulation").
func TestMiniredisModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := simredis.NewServer()
		defer srv.Close()
		c := srv.Client()
		defer c.Close()
		ctx := context.Background()

		// TIME is the bubble's virtual clock, to the microsecond, and
		// does not move while the bubble runs.
		before := time.Now()
		tm, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := before.Truncate(time.Microsecond); !tm.Equal(want) {
			t.Errorf("TIME = %v, want the virtual now %v", tm, want)
		}
		time.Sleep(24 * time.Hour)
		if tm2, _ := c.Time(ctx).Result(); tm2.Sub(tm) != 24*time.Hour {
			t.Errorf("TIME advanced %v over a virtual day, want 24h", tm2.Sub(tm))
		}

		// Key expiry follows virtual time exactly (ClockTTL): PTTL counts
		// down, the key is there 1 ms before its expiry and gone at it.
		c.Set(ctx, "k", "v", 0)
		c.PExpire(ctx, "k", 1500*time.Millisecond)
		time.Sleep(500 * time.Millisecond)
		if d, _ := c.PTTL(ctx, "k").Result(); d != time.Second {
			t.Errorf("PTTL after 500ms of 1500ms = %v, want 1s", d)
		}
		time.Sleep(999 * time.Millisecond)
		if n, _ := c.Exists(ctx, "k").Result(); n != 1 {
			t.Error("key gone 1ms before its expiry")
		}
		time.Sleep(time.Millisecond)
		if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
			t.Error("key still there at its expiry")
		}
		// PEXPIREAT is judged against the same clock.
		c.Set(ctx, "k2", "v", 0)
		c.PExpireAt(ctx, "k2", time.Now().Add(time.Minute))
		if d, _ := c.PTTL(ctx, "k2").Result(); d != time.Minute {
			t.Errorf("PTTL after PEXPIREAT now+1m = %v", d)
		}

		// A script is atomic: read-modify-write scripts from concurrent
		// connections lose no update.
		const per = 200
		incr := `local v = tonumber(redis.call('GET', KEYS[1]) or '0'); redis.call('SET', KEYS[1], v + 1); return v + 1`
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range per {
					if err := c.Eval(ctx, incr, []string{"n"}).Err(); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if n, _ := c.Get(ctx, "n").Int(); n != 4*per {
			t.Errorf("4×%d concurrent increments in scripts gave %d", per, n)
		}

		// Not modelled: sharded pub/sub (the store's scripts fall back to
		// PUBLISH through redis.pcall), CONFIG (CheckConfig cannot read the
		// eviction policy: there is no memory limit and no eviction).
		if err := c.Eval(ctx, `return redis.pcall('SPUBLISH', 'ch', 'm')`, nil).Err(); err == nil {
			t.Error("SPUBLISH answered: the doc says miniredis does not know it")
		}
		st, err := redisstore.New(c, redisstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CheckConfig(ctx); !errors.Is(err, redisstore.ErrConfigUnchecked) {
			t.Errorf("CheckConfig on miniredis: %v, want ErrConfigUnchecked", err)
		}
		// WAIT answers at once: there are no replicas.
		if n, err := c.Wait(ctx, 1, 100*time.Millisecond).Result(); err != nil || n != 0 {
			t.Errorf("WAIT 1 100 = %d, %v; want 0 replicas", n, err)
		}
	})
}
