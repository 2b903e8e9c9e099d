package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// CorruptAdminConfig describes a store that implements idem.CorruptLister
// and idem.CorruptPurger to CorruptAdmin.
type CorruptAdminConfig struct {
	// New returns a store that no other test writes to (a private prefix
	// or table): the cases count and list every record in it.
	New func(t *testing.T) idem.Store
	// Plant writes broken records behind the store's back under the keys
	// it returns, which must be "corrupt-0", "corrupt-1", … in order, at
	// least three of them. CorruptAdmin checks that Get reports
	// idem.ErrCorruptRecord for each.
	Plant func(t *testing.T, st idem.Store) []string
	// Listed checks what only the store knows of the record ListCorrupt
	// returned for the i-th planted key (its type, the length of its
	// digest, its reason, its fields). Nil checks nothing more.
	Listed func(t *testing.T, i int, r *idem.CorruptRecord)
	// Damage overwrites the record of key, which the store wrote, behind
	// its back with content it cannot decode. Versions 0 and 1 must store
	// different content, so that their digests differ.
	Damage func(t *testing.T, st idem.Store, key string, version int)
}

// CorruptAdmin runs the cases of the operator's tools for records that do
// not decode against cfg:
//
//	func TestCorruptAdmin(t *testing.T) { storetest.CorruptAdmin(t, cfg) }
//
// Stats (when the store is an idem.Statter) counts a planted record as
// corrupt exactly when Get reports it so; ListCorrupt lists every planted
// record and nothing else, honours its prefix and limit, and agrees with
// GetCorrupt; PurgeCorrupt deletes a record only with the digest of its
// current content, never one that decodes, purges every planted record,
// and the key's tokens keep increasing after a purge.
func CorruptAdmin(t *testing.T, cfg CorruptAdminConfig) {
	t.Helper()
	if cfg.New == nil || cfg.Plant == nil || cfg.Damage == nil {
		t.Fatal("storetest: CorruptAdminConfig needs New, Plant and Damage")
	}
	t.Run("Stats", func(t *testing.T) { corruptStats(t, cfg) })
	t.Run("List", func(t *testing.T) { corruptList(t, cfg) })
	t.Run("Purge", func(t *testing.T) { corruptPurge(t, cfg) })
	t.Run("PurgeEveryPlanted", func(t *testing.T) { corruptPurgeAll(t, cfg) })
}

// corruptAdmin is a store of cfg with both corrupt-record capabilities.
type corruptAdmin interface {
	idem.Store
	idem.CorruptLister
	idem.CorruptPurger
}

// newCorruptAdmin returns a store of cfg, failing t unless it has both
// capabilities.
func newCorruptAdmin(t *testing.T, cfg CorruptAdminConfig) corruptAdmin {
	t.Helper()
	st := cfg.New(t)
	s, ok := st.(corruptAdmin)
	if !ok {
		t.Fatalf("%T does not implement idem.CorruptLister and idem.CorruptPurger", st)
	}
	return s
}

// plantCorrupt plants cfg's broken records, then a live in-progress
// record ("live") and a completed one ("done") beside them. It returns the
// planted keys.
func plantCorrupt(t *testing.T, cfg CorruptAdminConfig, s idem.Store) []string {
	t.Helper()
	keys := cfg.Plant(t, s)
	if len(keys) < 3 {
		t.Fatalf("Plant planted %d records, want at least 3", len(keys))
	}
	for _, k := range keys {
		if _, err := s.Get(context.Background(), k); !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("planted %s: Get = %v, want ErrCorruptRecord", k, err)
		}
	}
	MustAcquire(t, s, "live", fp("live"), time.Hour)
	l := MustAcquire(t, s, "done", fp("done"), time.Hour)
	if err := s.Complete(context.Background(), l, sampleResponse("done"), time.Hour); err != nil {
		t.Fatal(err)
	}
	return keys
}

func corruptStats(t *testing.T, cfg CorruptAdminConfig) {
	s := newCorruptAdmin(t, cfg)
	statter, ok := s.(idem.Statter)
	if !ok {
		t.Skip("store does not implement idem.Statter")
	}
	keys := plantCorrupt(t, cfg, s)
	st, err := statter.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Bytes = 0
	if want := (idem.StoreStats{InProgress: 1, Completed: 1, Corrupt: int64(len(keys))}); st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}

func corruptList(t *testing.T, cfg CorruptAdminConfig) {
	s := newCorruptAdmin(t, cfg)
	ctx := context.Background()
	keys := plantCorrupt(t, cfg, s)
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
		r := got[k]
		if r == nil {
			t.Errorf("%s not listed", k)
			continue
		}
		if r.Digest == "" || r.Reason == "" {
			t.Errorf("%s: no digest or no reason: %+v", k, r)
		}
		if cfg.Listed != nil {
			cfg.Listed(t, i, r)
		}
		again, err := s.GetCorrupt(ctx, k)
		if err != nil || again.Digest != r.Digest || again.Reason != r.Reason {
			t.Errorf("GetCorrupt(%s) = %+v, %v; listed %+v", k, again, err, r)
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

// corruptPurge checks that PurgeCorrupt deletes a corrupt record only with
// the digest of its current content, never a record that decodes, and
// that the key's tokens keep increasing after a purge.
func corruptPurge(t *testing.T, cfg CorruptAdminConfig) {
	s := newCorruptAdmin(t, cfg)
	ctx := context.Background()
	l := MustAcquire(t, s, "k", fp("a"), time.Minute)
	cfg.Damage(t, s, "k", 0)
	seen, err := s.GetCorrupt(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The record changes after the operator looked: still corrupt, new digest.
	cfg.Damage(t, s, "k", 1)
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
	again := MustAcquire(t, s, "k", fp("a"), time.Minute)
	if again.Token <= l.Token {
		t.Fatalf("token after purge %d, before %d", again.Token, l.Token)
	}
	// A valid record is never deleted, whatever digest is given.
	for _, d := range []string{"", now.Digest, seen.Digest} {
		if err := s.PurgeCorrupt(ctx, "k", d); !errors.Is(err, idem.ErrNotCorrupt) {
			t.Fatalf("PurgeCorrupt of a valid record = %v, want ErrNotCorrupt", err)
		}
	}
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatalf("the valid record is gone: %v", err)
	}
}

// corruptPurgeAll checks that every planted record, whatever its shape,
// is purged with the digest GetCorrupt reports, and nothing else is.
func corruptPurgeAll(t *testing.T, cfg CorruptAdminConfig) {
	s := newCorruptAdmin(t, cfg)
	ctx := context.Background()
	for _, k := range plantCorrupt(t, cfg, s) {
		rec, err := s.GetCorrupt(ctx, k)
		if err == nil {
			err = s.PurgeCorrupt(ctx, k, rec.Digest)
		}
		if err != nil {
			t.Errorf("purge of %s: %v", k, err)
			continue
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, idem.ErrNotFound) {
			t.Errorf("Get(%s) after purge = %v, want ErrNotFound", k, err)
		}
	}
	for _, k := range []string{"live", "done"} {
		if _, err := s.Get(ctx, k); err != nil {
			t.Errorf("Get(%s) after the purges = %v; a valid record is gone", k, err)
		}
	}
}
