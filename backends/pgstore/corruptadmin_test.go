package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

func TestListCorrupt(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	keys := plantCorrupt(t, s)
	recs, err := s.ListCorrupt(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*idem.CorruptRecord{}
	for _, r := range recs {
		got[r.Key] = r
	}
	for i, k := range keys {
		r := got[k]
		if r == nil {
			t.Errorf("%s (%s) not listed", k, corruptRows[i].name)
			continue
		}
		if r.Type != "row" || len(r.Digest) != 64 || r.Reason == "" || len(r.Fields) != 9 {
			t.Errorf("%s: %+v", k, r)
		}
		again, err := s.GetCorrupt(ctx, k)
		if err != nil || again.Digest != r.Digest || again.Reason != r.Reason {
			t.Errorf("GetCorrupt(%s) = %+v, %v; listed %+v", k, again, err, r)
		}
	}
	if len(recs) != len(keys) {
		t.Errorf("ListCorrupt returned %d records, want %d", len(recs), len(keys))
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

// TestPurgeCorruptIsFenced checks that PurgeCorrupt deletes a corrupt row
// only with the digest of its current content, never a row that decodes,
// and that the key's tokens keep increasing after a purge.
func TestPurgeCorruptIsFenced(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	corrupt(t, s, "k", `token = 0`)
	seen, err := s.GetCorrupt(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The row changes after the operator looked: still corrupt, new digest.
	corrupt(t, s, "k", `fingerprint = '\x01'`)
	if err := s.PurgeCorrupt(ctx, "k", seen.Digest); !errors.Is(err, idem.ErrRecordChanged) {
		t.Fatalf("PurgeCorrupt with a stale digest = %v, want ErrRecordChanged", err)
	}
	now, err := s.GetCorrupt(ctx, "k")
	if err != nil || now.Digest == seen.Digest {
		t.Fatalf("the changed row: %+v, %v", now, err)
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
	again := mustAcquire(t, s, "k", fp("a"), time.Minute)
	if again.Token <= l.Token {
		t.Fatalf("token after purge %d, before %d", again.Token, l.Token)
	}
	// A valid row is never deleted, whatever digest is given.
	for _, d := range []string{"", now.Digest, seen.Digest} {
		if err := s.PurgeCorrupt(ctx, "k", d); !errors.Is(err, idem.ErrNotCorrupt) {
			t.Fatalf("PurgeCorrupt of a valid row = %v, want ErrNotCorrupt", err)
		}
	}
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatalf("the valid row is gone: %v", err)
	}
}
