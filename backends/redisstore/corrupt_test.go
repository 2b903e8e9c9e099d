package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// corruptions are ways a record key can hold garbage: wrong types, missing
// fields, fields that do not parse, contradictions.
var corruptions = []struct {
	name  string
	write func(ctx context.Context, c redis.UniversalClient, key string) error
}{
	{"string", func(ctx context.Context, c redis.UniversalClient, k string) error {
		return c.Set(ctx, k, "garbage", 0).Err()
	}},
	{"list", func(ctx context.Context, c redis.UniversalClient, k string) error {
		return c.RPush(ctx, k, "a", "b").Err()
	}},
	{"no status", hset("fp", fpA.String(), "token", "5", "lease_ms", "1")},
	{"unknown status", hset("status", "done", "fp", fpA.String(), "token", "5")},
	{"garbage token", hset("status", "in_progress", "fp", fpA.String(), "token", "abc", "lease_ms", "1")},
	{"zero token", hset("status", "in_progress", "fp", fpA.String(), "token", "0", "lease_ms", "1")},
	{"negative token", hset("status", "in_progress", "fp", fpA.String(), "token", "-3", "lease_ms", "1")},
	{"no lease", hset("status", "in_progress", "fp", fpA.String(), "token", "5")},
	{"garbage lease", hset("status", "in_progress", "fp", fpA.String(), "token", "5", "lease_ms", "soon")},
	{"bad fingerprint", hset("status", "in_progress", "fp", "zz", "token", "5", "lease_ms", "1")},
	{"no fingerprint", hset("status", "completed", "token", "5", "response", string(idem.EncodeResponse(&idem.Response{Status: 200})))},
	{"completed without response", hset("status", "completed", "fp", fpA.String(), "token", "5")},
	{"garbage response", hset("status", "completed", "fp", fpA.String(), "token", "5", "response", "\x01\xff\xff\xff")},
	{"truncated response", hset("status", "failed", "fp", fpA.String(), "token", "5",
		"response", strings.TrimSuffix(string(idem.EncodeResponse(&idem.Response{Status: 200, Body: []byte("body")})), "y"))},
	{"in progress with response", hset("status", "in_progress", "fp", fpA.String(), "token", "5", "lease_ms", "9999999999999",
		"response", string(idem.EncodeResponse(&idem.Response{Status: 200})))},
}

func hset(pairs ...string) func(ctx context.Context, c redis.UniversalClient, k string) error {
	return func(ctx context.Context, c redis.UniversalClient, k string) error {
		args := make([]any, len(pairs))
		for i, p := range pairs {
			args[i] = p
		}
		return c.HSet(ctx, k, args...).Err()
	}
}

// corruptSuite checks that every corruption is reported as
// idem.ErrCorruptRecord by Get and Acquire, is left in place, and never
// panics.
func corruptSuite(t *testing.T, mk func(t *testing.T) *Store) {
	for _, c := range corruptions {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			s := mk(t)
			ctx := ctxT(t)
			rk := keysFor(s.opts.Prefix, "k").record
			if err := c.write(ctx, s.client, rk); err != nil {
				t.Fatal(err)
			}
			before, err := s.client.Dump(ctx, rk).Result()
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := s.Get(ctx, "k"); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("Get = %+v, %v; want ErrCorruptRecord", rec, err)
			}
			for _, fp := range []idem.Fingerprint{fpA, fpB} {
				if l, rec, err := s.Acquire(ctx, "k", fp, longTTL); !errors.Is(err, idem.ErrCorruptRecord) {
					t.Fatalf("Acquire = %+v, %+v, %v; want ErrCorruptRecord", l, rec, err)
				}
			}
			if after, err := s.client.Dump(ctx, rk).Result(); err != nil || after != before {
				t.Fatalf("Acquire changed the corrupt key (err %v)", err)
			}
			// Fenced writes never panic and never report success on a key
			// that is not a record of theirs.
			l := &idem.Lease{Key: "k", Token: 7, Fingerprint: fpA}
			if err := s.Complete(ctx, l, resp("x"), retention); err == nil {
				t.Fatal("Complete on a corrupt key succeeded")
			}
			if err := s.Release(ctx, l); err == nil {
				t.Fatal("Release on a corrupt key succeeded")
			}
		})
	}
}
