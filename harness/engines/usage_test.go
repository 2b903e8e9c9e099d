package engines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

// TestUsageCountsWhatTheClientSent opens the reference engine's Redis and
// PostgreSQL stores through a netlag proxy, which counts the round trips
// it carries on its own, runs a known number of first executions,
// replays and conflicts one after the other, and checks the store's usage
// against them: the calls of each outcome exactly, the round trips the
// client library reported against the proxy's count of the same traffic,
// and every request filed under one outcome.
func TestUsageCountsWhatTheClientSent(t *testing.T) {
	for _, backend := range []harness.Backend{harness.Redis, harness.Postgres} {
		t.Run(string(backend), func(t *testing.T) {
			raw := testenv.RedisURL(t)
			if backend == harness.Postgres {
				raw = testenv.PostgresURL(t)
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			host := u.Host
			if _, _, err := net.SplitHostPort(host); err != nil {
				host = net.JoinHostPort(host, map[harness.Backend]string{harness.Redis: "6379", harness.Postgres: "5432"}[backend])
			}
			proxy := testenv.LagProxy(t, host, 0)
			u.Host = proxy.Addr()
			ctx := context.Background()
			st, closer, err := openReference(ctx, harness.Env{Backend: backend, URL: u.String(), Warn: func(string) {}})
			if err != nil {
				t.Fatal(err)
			}
			if closer != nil {
				defer closer.Close()
			}
			usage := st.(harness.UsageReporter)
			e := idem.New(st, idem.WithHeartbeat(-1))
			defer e.Close()
			prefix := fmt.Sprintf("usage-test-%d-", time.Now().UnixNano())
			fn := func(context.Context) (idem.Response, error) { return idem.Response{Status: 200}, nil }
			fp := idem.FingerprintString("usage")
			do := func(key string) error {
				_, err := e.Do(ctx, prefix+key, fp, fn)
				return err
			}
			// Warm up: connections and prepared statements, and the
			// keys the conflicts will find held.
			const first, conflicts = 20, 10
			if err := do("warm"); err != nil {
				t.Fatal(err)
			}
			for i := range conflicts {
				if _, _, err := st.Acquire(ctx, fmt.Sprintf("%sheld-%d", prefix, i), fp, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			if backend == harness.Postgres {
				// Idle for over a second, the pool pings a connection
				// before it hands it out: a round trip no tracer sees,
				// which the usage must count all the same.
				time.Sleep(1100 * time.Millisecond)
			}
			u0, p0 := usage.RunUsage(), proxy.RoundTrips()
			for i := range first {
				if err := do(fmt.Sprint("k-", i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range first {
				if err := do(fmt.Sprint("k-", i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range conflicts {
				if err := do(fmt.Sprint("held-", i)); !errors.Is(err, idem.ErrInProgress) {
					t.Fatalf("conflict %d: %v, want ErrInProgress", i, err)
				}
			}
			p1 := proxy.RoundTrips() // before RunUsage, whose server CPU read is not counted
			u1 := usage.RunUsage()

			want := map[string]int64{outcomeFirst: first, outcomeReplay: first, outcomeConflict: conflicts}
			var requests, roundTrips int64
			for i, o := range u1.Outcomes {
				calls := o.Calls - u0.Outcomes[i].Calls
				req, rt := o.Requests-u0.Outcomes[i].Requests, o.RoundTrips-u0.Outcomes[i].RoundTrips
				t.Logf("%s: %d calls, %.2f requests and %.2f round trips per Do", o.Outcome, calls, float64(req)/float64(calls), float64(rt)/float64(calls))
				if calls != want[o.Outcome] {
					t.Errorf("%s: %d calls, want %d", o.Outcome, calls, want[o.Outcome])
				}
				if req < calls || rt < calls {
					t.Errorf("%s: %d requests in %d round trips for %d calls: fewer than one each", o.Outcome, req, rt, calls)
				}
				requests, roundTrips = requests+req, roundTrips+rt
			}
			if got := u1.Requests - u0.Requests; got != requests {
				t.Errorf("%d requests in all, %d filed under an outcome", got, requests)
			}
			if got := u1.RoundTrips - u0.RoundTrips; got != p1-p0 || got != roundTrips {
				t.Errorf("client counted %d round trips (%d under an outcome), the proxy %d", got, roundTrips, p1-p0)
			}
			switch {
			case strings.HasPrefix(u1.ServerCPU, "n/a: "):
				t.Logf("server CPU %s", u1.ServerCPU)
			case u1.ServerCPU == "" || u1.ServerCPUSeconds < 0:
				t.Errorf("server CPU %q, %g s: want a source and a figure, or n/a and why", u1.ServerCPU, u1.ServerCPUSeconds)
			default:
				t.Logf("server CPU %.1f µs per Do (%s)", (u1.ServerCPUSeconds-u0.ServerCPUSeconds)*1e6/float64(2*first+conflicts), u1.ServerCPU)
			}
		})
	}
}
