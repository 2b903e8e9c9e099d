package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/internal/testenv"
)

// TestRunDeletesItsData: a run on Redis or PostgreSQL deletes its keys and
// rows at the end unless KeepData is set; Purge removes kept ones and
// leaves the Redis fence counters.
func TestRunDeletesItsData(t *testing.T) {
	cases := []struct {
		backend harness.Backend
		url     func(testing.TB) string
		sink    string
	}{
		{harness.Redis, testenv.RedisURL, "fenced"},
		{harness.Postgres, testenv.PostgresURL, "tx"},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(string(c.backend), func(t *testing.T) {
			url := c.url(t)
			left := func(t *testing.T, keep bool) (string, int) {
				t.Helper()
				o, err := harness.Run(ctx, harness.Spec{
					Engine: engine(t, harness.ReferenceEngine), Backend: c.backend, URL: url,
					ScenarioName: "duplicates", Sink: c.sink, KeepData: keep,
					Overrides: harness.Overrides{Seed: 11, Duration: 300 * time.Millisecond},
				})
				if err != nil {
					t.Fatal(err)
				}
				prefix := o.History.Header.Options["key_prefix"]
				if prefix == "" {
					t.Fatal("no key_prefix in the history header")
				}
				p, err := engines.Purge(ctx, c.backend, url, engines.PurgeOptions{Prefix: prefix, DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				return prefix, p.Items
			}
			if _, n := left(t, false); n != 0 {
				t.Errorf("a run left %d items behind", n)
			}
			prefix, n := left(t, true)
			if n == 0 {
				t.Fatal("a --keep-data run left nothing: the purge check would pass vacuously")
			}
			// By prefix only: the servers are shared with other tests, whose
			// runs must not lose their keys.
			p, err := engines.Purge(ctx, c.backend, url, engines.PurgeOptions{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if p.Items != n || len(p.Runs) != 1 || p.Runs[0] != prefix {
				t.Errorf("purge deleted %d items of runs %v, want %d of [%s]", p.Items, p.Runs, n, prefix)
			}
			// Selecting by start time finds no run started before the epoch.
			if old, err := engines.Purge(ctx, c.backend, url, engines.PurgeOptions{Before: time.UnixMilli(1), DryRun: true}); err != nil || old.Items != 0 {
				t.Errorf("runs before 1970: %+v, %v", old, err)
			}
			if again, err := engines.Purge(ctx, c.backend, url, engines.PurgeOptions{Prefix: prefix, DryRun: true}); err != nil || again.Items != 0 {
				t.Errorf("after the purge: %+v, %v; want nothing left", again, err)
			}
			if c.backend == harness.Redis {
				opt, _ := redis.ParseURL(url)
				cl := redis.NewClient(opt)
				defer cl.Close()
				keys, _, err := cl.Scan(ctx, 0, engines.RedisPrefix+":fence:*", 10000).Result()
				if err != nil || len(keys) == 0 {
					t.Errorf("fence counters after the purge: %d, %v; want them kept", len(keys), err)
				}
			}
		})
	}
}
