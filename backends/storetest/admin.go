package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// Admin runs the cases of the optional operator capabilities (idem.Lister,
// idem.Statter) and of the completer (idem.Engine.RecoverAbandoned) against
// cfg. It is a group of its own, registered next to Run:
//
//	func TestAdmin(t *testing.T) { storetest.Admin(t, cfg) }
//
// Stats counts every record of a store, so cfg.New must return a store that
// no other test writes to while a case runs (a private prefix or table).
// Cases whose capability the store lacks are skipped. The completer cases
// also run the known-bad completer (naive.UnfencedCompleter) and require it to
// produce a double effect: a suite that cannot see that flaw proves nothing
// about the real one.
func Admin(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("storetest: Config.New is nil")
	}
	s := newSuite(cfg)
	cases := []adminCase{
		{"ListStuckFindsExpiredLeases", listStuck},
		{"StatsCountsPerStatus", stats},
		{"CompleterFinishesAbandonedKeys", func(t *testing.T, s *suite, st idem.Store, key string) {
			if v := completerRun(t, s, st, key, false); len(v) > 0 {
				t.Fatalf("reference completer: %d violations: %v", len(v), v)
			}
		}},
		{"UnfencedCompleterIsCaught", func(t *testing.T, s *suite, st idem.Store, key string) {
			v := completerRun(t, s, st, key, true)
			if len(v) == 0 {
				t.Fatal("the unfenced completer produced no violation: the completer case cannot see the flaw")
			}
			t.Logf("unfenced completer caught: %v", v)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if cfg.Advance == nil {
				t.Parallel()
			}
			c.run(t, s, cfg.New(t), uniqueKey(t))
		})
	}
}

func listStuck(t *testing.T, s *suite, st idem.Store, key string) {
	lister, ok := st.(idem.Lister)
	if !ok {
		t.Skip("store does not implement idem.Lister")
	}
	start := time.Now()
	stuck1 := MustAcquire(t, st, key+"-s1", fp("a"), s.ttl)
	stuck2 := MustAcquire(t, st, key+"-s2", fp("b"), s.ttl)
	done := MustAcquire(t, st, key+"-done", fp("c"), s.ttl)
	if err := st.Complete(context.Background(), done, sampleResponse("d"), long); err != nil {
		t.Fatal(err)
	}
	released := MustAcquire(t, st, key+"-rel", fp("d"), s.ttl)
	if err := st.Release(context.Background(), released); err != nil {
		t.Fatal(err)
	}
	// Only judged when the set-up and the listing took less than the lease:
	// on a loaded machine (a scan of a shared server under -race) they can
	// take longer, and then the leases did expire.
	recs, err := lister.ListStuck(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); len(recs) != 0 && took < s.ttl {
		t.Fatalf("before expiry: ListStuck = %d records; want none", len(recs))
	} else if len(recs) != 0 {
		t.Logf("before expiry not judged: set-up and listing took %v, past the %v lease", took, s.ttl)
	}
	s.wait(s.pastTTL())
	live := MustAcquire(t, st, key+"-live", fp("e"), long)
	_ = live
	recs, err = lister.ListStuck(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*idem.Record{}
	for _, r := range recs {
		got[r.Key] = r
	}
	if len(got) != 2 || got[stuck1.Key] == nil || got[stuck2.Key] == nil {
		t.Fatalf("ListStuck = %v, want exactly %s and %s", keysOf(recs), stuck1.Key, stuck2.Key)
	}
	if r := got[stuck1.Key]; r.Token != stuck1.Token || r.Fingerprint != stuck1.Fingerprint || r.Status != idem.StatusInProgress {
		t.Fatalf("listed record %+v, lease %+v", r, stuck1)
	}
	if recs, err := lister.ListStuck(context.Background(), 0, 1); err != nil || len(recs) != 1 {
		t.Fatalf("limit 1: %d records, %v", len(recs), err)
	}
	if recs, err := lister.ListStuck(context.Background(), time.Hour, 0); err != nil || len(recs) != 0 {
		t.Fatalf("older than an hour: %v, %v; want none", keysOf(recs), err)
	}
	listStuckPrefix(t, st, key, stuck1.Key, stuck2.Key)
}

// listStuckPrefix checks idem.PrefixLister, when the store has it, on the
// stuck keys s1 and s2 that listStuck left under key.
func listStuckPrefix(t *testing.T, st idem.Store, key, s1, s2 string) {
	pl, ok := st.(idem.PrefixLister)
	if !ok {
		return
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{key + "-s1", []string{s1}},
		{key + "-s", []string{s1, s2}},
		{key + "-s*", nil}, // a glob character is matched literally
		{key + "-d", nil},  // completed, not stuck
		{"no-such-prefix-" + key, nil},
	} {
		recs, err := pl.ListStuckPrefix(context.Background(), c.prefix, 0, 0)
		got := keysOf(recs)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ListStuckPrefix(%q) = %v, %v; want %v", c.prefix, got, err, c.want)
		}
	}
}

func keysOf(recs []*idem.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Key)
	}
	return out
}

func stats(t *testing.T, s *suite, st idem.Store, key string) {
	statter, ok := st.(idem.Statter)
	if !ok {
		t.Skip("store does not implement idem.Statter")
	}
	before, err := statter.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []string{"a", "b", "c"} {
		l := MustAcquire(t, st, key+"-c"+f, fp(f), long)
		if i < 2 {
			if err := st.Complete(context.Background(), l, sampleResponse(f), long); err != nil {
				t.Fatal(err)
			}
		} else if err := st.Fail(context.Background(), l, sampleResponse(f), long); err != nil {
			t.Fatal(err)
		}
	}
	MustAcquire(t, st, key+"-live", fp("l"), long)
	MustAcquire(t, st, key+"-stuck", fp("s"), s.ttl)
	s.wait(s.pastTTL())
	after, err := statter.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := idem.StoreStats{
		InProgress: after.InProgress - before.InProgress, Stuck: after.Stuck - before.Stuck,
		Completed: after.Completed - before.Completed, Failed: after.Failed - before.Failed,
	}
	if want := (idem.StoreStats{InProgress: 2, Stuck: 1, Completed: 2, Failed: 1}); d != want {
		t.Fatalf("Stats grew by %+v, want %+v (before %+v, after %+v)", d, want, before, after)
	}
	if after.Bytes <= 0 || after.Bytes < before.Bytes {
		t.Fatalf("Bytes %d after, %d before", after.Bytes, before.Bytes)
	}
}

// adminCase is one admin case.
type adminCase struct {
	name string
	run  func(t *testing.T, s *suite, st idem.Store, key string)
}
