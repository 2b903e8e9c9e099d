package redisstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// corruptKeys are planted corruptions of every Redis type a record name can
// hold, with the type GetCorrupt must report.
var corruptKeys = []struct {
	name, typ string
	write     func(ctx context.Context, c redis.UniversalClient, k string) error
}{
	{"string", "string", func(ctx context.Context, c redis.UniversalClient, k string) error {
		return c.Set(ctx, k, "garbage", 0).Err()
	}},
	{"long list", "list", func(ctx context.Context, c redis.UniversalClient, k string) error {
		vals := make([]any, maxRawFields+6)
		for i := range vals {
			vals[i] = fmt.Sprint("v", i)
		}
		return c.RPush(ctx, k, vals...).Err()
	}},
	{"set", "set", func(ctx context.Context, c redis.UniversalClient, k string) error {
		return c.SAdd(ctx, k, "b", "a", "c").Err()
	}},
	{"sorted set", "zset", func(ctx context.Context, c redis.UniversalClient, k string) error {
		return c.ZAdd(ctx, k, redis.Z{Score: 1, Member: "a"}).Err()
	}},
	{"stream", "stream", func(ctx context.Context, c redis.UniversalClient, k string) error {
		return c.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"f", "v"}}).Err()
	}},
	{"in progress, garbage token", "hash", hset("status", "in_progress", "fp", fpA.String(), "token", "abc", "lease_ms", "1")},
	{"in progress, zero token", "hash", hset("status", "in_progress", "fp", fpA.String(), "token", "0", "lease_ms", "1")},
	{"in progress, no lease", "hash", hset("status", "in_progress", "fp", fpA.String(), "token", "5")},
	{"unknown status", "hash", hset("status", "done", "fp", fpA.String(), "token", "5")},
	{"completed, garbage response", "hash", hset("status", "completed", "fp", fpA.String(), "token", "5", "response", "\x01\xff\xff\xff")},
}

func TestCorruptAdmin(t *testing.T) {
	t.Parallel()
	corruptAdminSuite(t, newClient(t))
}

// TestCorruptAdminCluster finds and purges corrupt records spread over the
// three primaries of a private Redis Cluster.
func TestCorruptAdminCluster(t *testing.T) {
	t.Parallel()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: startCluster(t)})
	t.Cleanup(func() { _ = client.Close() })
	corruptAdminSuite(t, client)
}

// corruptAdminSuite runs the suite's corrupt-record cases (Stats,
// ListCorrupt, GetCorrupt, PurgeCorrupt) on records broken by corruptKeys,
// written through client.
func corruptAdminSuite(t *testing.T, client redis.UniversalClient) {
	storetest.CorruptAdmin(t, storetest.CorruptAdminConfig{
		New: func(t *testing.T) idem.Store { return newStore(t, client, Options{}) },
		Plant: func(t *testing.T, st idem.Store) []string {
			s := st.(*Store)
			var keys []string
			for i, c := range corruptKeys {
				key := fmt.Sprintf("corrupt-%d", i)
				if err := c.write(ctxT(t), s.client, keysFor(s.opts.Prefix, key).record); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, key)
			}
			return keys
		},
		Listed: checkListedCorrupt,
		Damage: func(t *testing.T, st idem.Store, key string, version int) {
			s := st.(*Store)
			if err := s.client.HSet(ctxT(t), keysFor(s.opts.Prefix, key).record, "token", []string{"x", "y"}[version]).Err(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// checkListedCorrupt checks the listed record of corruptKeys[i]: its Redis
// type, a SHA-1 digest, a reason, and the fields of the long list (cut at
// maxRawFields) and of the set (members in order).
func checkListedCorrupt(t *testing.T, i int, r *idem.CorruptRecord) {
	c := corruptKeys[i]
	if r.Type != c.typ || len(r.Digest) != 40 || !strings.Contains(r.Reason, "corrupt") {
		t.Errorf("%s (%s): type %q digest %q reason %q", r.Key, c.name, r.Type, r.Digest, r.Reason)
	}
	switch c.name {
	case "long list":
		if len(r.Fields) != maxRawFields || r.More != 6 || string(r.Fields[0].Value) != "v0" {
			t.Errorf("long list: %d fields, %d more, first %+v", len(r.Fields), r.More, r.Fields[0])
		}
	case "set":
		if diff := cmp.Diff([]idem.RawField{{Name: "[0]", Value: []byte("a")}, {Name: "[1]", Value: []byte("b")}, {Name: "[2]", Value: []byte("c")}}, r.Fields); diff != "" {
			t.Errorf("set members (-want +got):\n%s", diff)
		}
	}
}
