package simredis_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim/simredis"
)

// TestLeaseLastsItsTTL: the scripts read TIME in whole milliseconds, and a
// lease granted or renewed at any fraction of a millisecond is not taken
// over before its TTL has passed in true time (a lease that started from
// the rounded-down time ended up to 1 ms early), while a take-over comes
// at most 1 ms after it. Claims, heartbeats and the multi-key claim of a
// batch are each held to it, on the virtual clock of a synctest bubble.
func TestLeaseLastsItsTTL(t *testing.T) {
	const ttl = 10 * time.Millisecond
	fp := idem.NewFingerprint([]byte("req"))
	for _, frac := range []time.Duration{0, time.Microsecond, 500 * time.Microsecond, 999 * time.Microsecond} {
		for _, how := range []string{"acquire", "heartbeat", "batch"} {
			t.Run(fmt.Sprintf("%s/%v", how, frac), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := simredis.NewServer()
					defer srv.Close()
					c := srv.Client()
					defer c.Close()
					st, err := redisstore.New(c, redisstore.Options{})
					if err != nil {
						t.Fatal(err)
					}
					ctx := context.Background()
					time.Sleep(time.Second + frac) // the bubble starts on a whole second
					var start time.Time
					switch how {
					case "acquire", "heartbeat":
						l, _, err := st.Acquire(ctx, "k", fp, ttl)
						if err != nil || l == nil {
							t.Fatalf("first Acquire: %+v, %v", l, err)
						}
						start = time.Now()
						if how == "heartbeat" {
							time.Sleep(3*time.Millisecond + 333*time.Microsecond)
							if err := st.Heartbeat(ctx, l, ttl); err != nil {
								t.Fatal(err)
							}
							start = time.Now()
						}
					case "batch":
						res := st.AcquireBatch(ctx, []idem.AcquireRequest{{Key: "k", Fingerprint: fp}, {Key: "k2", Fingerprint: fp}}, ttl)
						if res[0].Err != nil || res[0].Lease == nil {
							t.Fatalf("AcquireBatch: %+v", res[0])
						}
						start = time.Now()
					}
					time.Sleep(ttl - time.Microsecond)
					if l, rec, err := st.Acquire(ctx, "k", fp, ttl); err != nil || l != nil {
						t.Fatalf("taken over %v after the lease started (TTL %v): lease %+v, record %+v, %v",
							time.Since(start), ttl, l, rec, err)
					}
					time.Sleep(time.Millisecond + time.Microsecond)
					if l, rec, err := st.Acquire(ctx, "k", fp, ttl); err != nil || l == nil {
						t.Fatalf("not taken over %v after the lease started (TTL %v): record %+v, %v",
							time.Since(start), ttl, rec, err)
					}
				})
			})
		}
	}
}
