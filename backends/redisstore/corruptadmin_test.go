package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

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
	{"in progress, garbage token", "hash", hashOf("status", "in_progress", "fp", fpA.String(), "token", "abc", "lease_ms", "1")},
	{"in progress, zero token", "hash", hashOf("status", "in_progress", "fp", fpA.String(), "token", "0", "lease_ms", "1")},
	{"in progress, no lease", "hash", hashOf("status", "in_progress", "fp", fpA.String(), "token", "5")},
	{"unknown status", "hash", hashOf("status", "done", "fp", fpA.String(), "token", "5")},
	{"completed, garbage response", "hash", hashOf("status", "completed", "fp", fpA.String(), "token", "5", "response", "\x01\xff\xff\xff")},
}

func hashOf(pairs ...string) func(ctx context.Context, c redis.UniversalClient, k string) error {
	return func(ctx context.Context, c redis.UniversalClient, k string) error {
		args := make([]any, len(pairs))
		for i, p := range pairs {
			args[i] = p
		}
		return c.HSet(ctx, k, args...).Err()
	}
}

// plantCorrupt writes every corruptKeys entry under corrupt-N and a live
// and a completed record beside them; it returns the corrupt keys.
func plantCorrupt(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := ctxT(t)
	var keys []string
	for i, c := range corruptKeys {
		key := fmt.Sprintf("corrupt-%d", i)
		if err := c.write(ctx, s.client, keysFor(s.opts.Prefix, key).record); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("%s: Get = %v, want ErrCorruptRecord", c.name, err)
		}
		keys = append(keys, key)
	}
	mustAcquire(t, s, "live", fpA, longTTL)
	l := mustAcquire(t, s, "done", fpB, longTTL)
	if err := s.Complete(ctx, l, resp("ok"), longTTL); err != nil {
		t.Fatal(err)
	}
	return keys
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

func corruptAdminSuite(t *testing.T, client redis.UniversalClient) {
	t.Run("stats", func(t *testing.T) {
		s := newStore(t, client, Options{})
		keys := plantCorrupt(t, s)
		st, err := s.Stats(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		st.Bytes = 0
		if diff := cmp.Diff(idem.StoreStats{InProgress: 1, Completed: 1, Corrupt: int64(len(keys))}, st); diff != "" {
			t.Fatalf("Stats (-want +got):\n%s", diff)
		}
	})
	t.Run("list", func(t *testing.T) { testListCorrupt(t, newStore(t, client, Options{})) })
	t.Run("purge", func(t *testing.T) { testPurgeCorrupt(t, newStore(t, client, Options{})) })
}

func testListCorrupt(t *testing.T, s *Store) {
	ctx := ctxT(t)
	keys := plantCorrupt(t, s)
	recs, err := s.ListCorrupt(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*idem.CorruptRecord{}
	for _, r := range recs {
		got[r.Key] = r
	}
	if len(recs) != len(keys) {
		t.Errorf("ListCorrupt returned %d records, want %d", len(recs), len(keys))
	}
	for i, k := range keys {
		c, r := corruptKeys[i], got[k]
		if r == nil {
			t.Errorf("%s (%s) not listed", k, c.name)
			continue
		}
		if r.Type != c.typ || len(r.Digest) != 40 || !strings.Contains(r.Reason, "corrupt") {
			t.Errorf("%s (%s): type %q digest %q reason %q", k, c.name, r.Type, r.Digest, r.Reason)
		}
		again, err := s.GetCorrupt(ctx, k)
		if err != nil || again.Digest != r.Digest {
			t.Errorf("GetCorrupt(%s) = %+v, %v; listed digest %s", k, again, err, r.Digest)
		}
	}
	if r := got["corrupt-1"]; r != nil && (len(r.Fields) != maxRawFields || r.More != 6 || string(r.Fields[0].Value) != "v0") {
		t.Errorf("long list: %d fields, %d more, first %+v", len(r.Fields), r.More, r.Fields[0])
	}
	if r := got["corrupt-2"]; r != nil {
		if diff := cmp.Diff([]idem.RawField{{Name: "[0]", Value: []byte("a")}, {Name: "[1]", Value: []byte("b")}, {Name: "[2]", Value: []byte("c")}}, r.Fields); diff != "" {
			t.Errorf("set members (-want +got):\n%s", diff)
		}
	}
	if recs, err := s.ListCorrupt(ctx, "corrupt-1", 0); err != nil || len(recs) != 1 || recs[0].Key != "corrupt-1" {
		t.Errorf("ListCorrupt(prefix corrupt-1) = %v, %v", recs, err)
	}
	if recs, err := s.ListCorrupt(ctx, "", 2); err != nil || len(recs) != 2 {
		t.Errorf("ListCorrupt(limit 2) = %d records, %v", len(recs), err)
	}
	for _, k := range []string{"live", "done"} {
		if _, err := s.GetCorrupt(ctx, k); !errors.Is(err, idem.ErrNotCorrupt) {
			t.Errorf("GetCorrupt(%s) = %v, want ErrNotCorrupt", k, err)
		}
	}
	if _, err := s.GetCorrupt(ctx, "nope"); !errors.Is(err, idem.ErrNotFound) {
		t.Errorf("GetCorrupt(nope) = %v, want ErrNotFound", err)
	}
}

// testPurgeCorrupt checks that PurgeCorrupt deletes a corrupt key only with
// the digest of its current content, never a record that decodes, and
// that the key's tokens keep increasing after a purge.
func testPurgeCorrupt(t *testing.T, s *Store) {
	ctx := ctxT(t)
	l := mustAcquire(t, s, "k", fpA, time.Minute)
	name := keysFor(s.opts.Prefix, "k").record
	if err := s.client.HSet(ctx, name, "token", "x").Err(); err != nil {
		t.Fatal(err)
	}
	seen, err := s.GetCorrupt(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The record changes after the operator looked: still corrupt, new digest.
	if err := s.client.HSet(ctx, name, "token", "y").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.PurgeCorrupt(ctx, "k", seen.Digest); !errors.Is(err, idem.ErrRecordChanged) {
		t.Fatalf("PurgeCorrupt with a stale digest = %v, want ErrRecordChanged", err)
	}
	now, err := s.GetCorrupt(ctx, "k")
	if err != nil || now.Digest == seen.Digest {
		t.Fatalf("the changed record: %+v, %v", now, err)
	}
	if err := s.PurgeCorrupt(ctx, "k", now.Digest); err != nil {
		t.Fatalf("PurgeCorrupt: %v", err)
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get after purge = %v, want ErrNotFound", err)
	}
	if err := s.PurgeCorrupt(ctx, "k", now.Digest); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("second PurgeCorrupt = %v, want ErrNotFound", err)
	}
	again := mustAcquire(t, s, "k", fpA, time.Minute)
	if again.Token <= l.Token {
		t.Fatalf("token after purge %d, before %d", again.Token, l.Token)
	}
	for _, d := range []string{"", now.Digest, seen.Digest} {
		if err := s.PurgeCorrupt(ctx, "k", d); !errors.Is(err, idem.ErrNotCorrupt) {
			t.Fatalf("PurgeCorrupt of a valid record = %v, want ErrNotCorrupt", err)
		}
	}
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatalf("the valid record is gone: %v", err)
	}
	// A key of another type is purged the same way.
	if err := s.client.RPush(ctx, keysFor(s.opts.Prefix, "l").record, "a").Err(); err != nil {
		t.Fatal(err)
	}
	rec, err := s.GetCorrupt(ctx, "l")
	if err == nil {
		err = s.PurgeCorrupt(ctx, "l", rec.Digest)
	}
	if err != nil {
		t.Fatalf("purge of a list: %v", err)
	}
}
