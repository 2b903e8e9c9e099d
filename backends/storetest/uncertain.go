package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/idembench/idembench/idem"
)

// The uncertain group holds stores that implement idem.UncertainStore to
// its contract: an uncertain record is never taken over, its write and its
// resolution are fenced by token, and a resolution either completes it
// (replayed from then on) or frees the key under a higher token. A store
// without the capability skips the group.

// Uncertain cases fail when an execution whose outcome is unknown can run
// again without an operator's resolution, or a resolution can settle the
// wrong execution.
const Uncertain Group = "uncertain"

func uncertainCases() []groupCase {
	return []groupCase{
		{"UncertainRecordIsNeverTakenOver", uncertainNotTakenOver},
		{"UncertainWriteIsFenced", uncertainFenced},
		{"ResolveAppliedCompletesForReplay", resolveApplied},
		{"ResolveNotAppliedFreesKeyWithHigherToken", resolveNotApplied},
		{"ResolveIsFencedByToken", resolveFenced},
		{"EngineNeverRunsUncertainKeyAgain", engineUncertain},
		{"UncertainRecordsAreListed", uncertainListed},
	}
}

// uncertainListed: a store that implements idem.UncertainLister lists
// the uncertain records of a prefix, and only them, until they are
// resolved.
func uncertainListed(t testing.TB, s *suite, st idem.Store, key string) {
	ul, ok := st.(idem.UncertainLister)
	if !ok {
		t.Skip("store does not implement idem.UncertainLister")
	}
	l := markUncertain(t, st, key+".u1", idem.Response{Status: 504})
	markUncertain(t, st, key+".u2", idem.Response{Status: 504})
	done := MustAcquire(t, st, key+".done", fp("a"), long)
	if err := st.Complete(bg(), done, sampleResponse("done"), long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	MustAcquire(t, st, key+".running", fp("a"), long)
	list := func(limit int) map[string]bool {
		t.Helper()
		recs, err := ul.ListUncertain(bg(), key+".", limit)
		if err != nil {
			t.Fatalf("ListUncertain: %v", err)
		}
		got := map[string]bool{}
		for _, r := range recs {
			if r.Status != idem.StatusUncertain {
				t.Fatalf("ListUncertain returned %+v", r)
			}
			got[r.Key] = true
		}
		return got
	}
	if got := list(0); len(got) != 2 || !got[key+".u1"] || !got[key+".u2"] {
		t.Fatalf("ListUncertain = %v, want %s.u1 and %s.u2", got, key, key)
	}
	if got := list(1); len(got) != 1 {
		t.Fatalf("ListUncertain with limit 1 = %v", got)
	}
	if err := uncertainStore(t, st).Resolve(bg(), key+".u1", l.Token, nil, long); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if got := list(0); len(got) != 1 || !got[key+".u2"] {
		t.Fatalf("ListUncertain after resolving u1 = %v, want %s.u2", got, key)
	}
}

// uncertainStore returns st as an idem.UncertainStore, or skips t.
func uncertainStore(t testing.TB, st idem.Store) idem.UncertainStore {
	t.Helper()
	us, ok := st.(idem.UncertainStore)
	if !ok {
		t.Skip("store does not implement idem.UncertainStore")
	}
	return us
}

// markUncertain acquires key and records it uncertain with resp.
func markUncertain(t testing.TB, st idem.Store, key string, resp idem.Response) *idem.Lease {
	t.Helper()
	us := uncertainStore(t, st)
	l := MustAcquire(t, st, key, fp("a"), long)
	if err := us.MarkUncertain(bg(), l, resp, long); err != nil {
		t.Fatalf("MarkUncertain: %v", err)
	}
	return l
}

func uncertainNotTakenOver(t testing.TB, s *suite, st idem.Store, key string) {
	us := uncertainStore(t, st)
	l := MustAcquire(t, st, key, fp("a"), s.ttl)
	want := idem.Response{Status: 504, Body: []byte("upstream timed out")}
	if err := us.MarkUncertain(bg(), l, want, long); err != nil {
		t.Fatalf("MarkUncertain: %v", err)
	}
	s.wait(s.pastTTL()) // long past the lease the record was written under
	rec := MustRecord(t, st, key, fp("a"), s.ttl)
	if rec.Status != idem.StatusUncertain || rec.Token != l.Token || !rec.LeaseExpiry.IsZero() {
		t.Fatalf("record = %+v, want uncertain under token %d without a lease", rec, l.Token)
	}
	sameResponse(t, rec.Response, want)
	if got := mustGet(t, st, key); got.Status != idem.StatusUncertain {
		t.Fatalf("Get: status %v, want uncertain", got.Status)
	}
	if err := st.Complete(bg(), l, sampleResponse("late"), long); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete on the uncertain record: %v, want ErrLeaseLost", err)
	}
	if err := st.Release(bg(), l); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release on the uncertain record: %v, want ErrLeaseLost", err)
	}
}

func uncertainFenced(t testing.TB, s *suite, st idem.Store, key string) {
	us := uncertainStore(t, st)
	old := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.pastTTL())
	cur := MustAcquire(t, st, key, fp("a"), long)
	if err := us.MarkUncertain(bg(), old, idem.Response{}, long); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("MarkUncertain with the superseded token: %v, want ErrLeaseLost", err)
	}
	if rec := mustGet(t, st, key); rec.Status != idem.StatusInProgress || rec.Token != cur.Token {
		t.Fatalf("record after the refused write = %+v, want in progress under token %d", rec, cur.Token)
	}
	if err := us.MarkUncertain(bg(), &idem.Lease{Key: key + ".absent", Token: cur.Token}, idem.Response{}, long); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("MarkUncertain on an absent key: %v, want ErrLeaseLost", err)
	}
}

func resolveApplied(t testing.TB, s *suite, st idem.Store, key string) {
	us := uncertainStore(t, st)
	l := markUncertain(t, st, key, idem.Response{})
	want := sampleResponse("resolved")
	if err := us.Resolve(bg(), key, l.Token, &want, long); err != nil {
		t.Fatalf("Resolve applied: %v", err)
	}
	rec := MustRecord(t, st, key, fp("a"), long)
	if rec.Status != idem.StatusCompleted || rec.Token != l.Token {
		t.Fatalf("record = %+v, want completed under token %d", rec, l.Token)
	}
	sameResponse(t, rec.Response, want)
	if err := us.Resolve(bg(), key, l.Token, nil, long); !errors.Is(err, idem.ErrNotUncertain) {
		t.Fatalf("second Resolve: %v, want ErrNotUncertain", err)
	}
	if rec := mustGet(t, st, key); rec.Status != idem.StatusCompleted {
		t.Fatalf("record after the refused second Resolve: %v, want completed", rec.Status)
	}
}

func resolveNotApplied(t testing.TB, s *suite, st idem.Store, key string) {
	us := uncertainStore(t, st)
	l := markUncertain(t, st, key, idem.Response{Status: 504})
	if err := us.Resolve(bg(), key, l.Token, nil, long); err != nil {
		t.Fatalf("Resolve not applied: %v", err)
	}
	wantFreed(t, st, key, l, "Resolve not applied")
}

func resolveFenced(t testing.TB, s *suite, st idem.Store, key string) {
	us := uncertainStore(t, st)
	if err := us.Resolve(bg(), key, 1, nil, long); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Resolve of an absent key: %v, want ErrNotFound", err)
	}
	l := MustAcquire(t, st, key, fp("a"), long)
	if err := us.Resolve(bg(), key, l.Token, nil, long); !errors.Is(err, idem.ErrNotUncertain) {
		t.Fatalf("Resolve of an in-progress key: %v, want ErrNotUncertain", err)
	}
	if err := us.MarkUncertain(bg(), l, idem.Response{}, long); err != nil {
		t.Fatalf("MarkUncertain: %v", err)
	}
	other := sampleResponse("other")
	if err := us.Resolve(bg(), key, l.Token+1, &other, long); !errors.Is(err, idem.ErrNotUncertain) {
		t.Fatalf("Resolve with another token: %v, want ErrNotUncertain", err)
	}
	if rec := mustGet(t, st, key); rec.Status != idem.StatusUncertain || rec.Token != l.Token {
		t.Fatalf("record after refused resolutions = %+v, want uncertain under token %d", rec, l.Token)
	}
}

// engineUncertain runs the engine on the store: an ambiguous error records
// the key uncertain; later calls, even long after, never run the function;
// a resolution as applied makes them replay it.
func engineUncertain(t testing.TB, s *suite, st idem.Store, key string) {
	uncertainStore(t, st)
	var events []idem.Transition
	e := idem.New(st, idem.WithLeaseTTL(s.ttl), idem.WithRetention(long),
		idem.WithObserver(func(_ context.Context, ev idem.Event) { events = append(events, ev.Transition) }))
	defer e.Close()
	errTimeout := errors.New("payment provider timed out")
	res, err := e.Do(bg(), key, fp("a"), func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 504}, idem.MarkAmbiguous(errTimeout)
	})
	if !errors.Is(err, idem.ErrUncertain) || !errors.Is(err, errTimeout) || !res.Uncertain {
		t.Fatalf("Do with an ambiguous error: %+v, %v; want ErrUncertain wrapping it", res, err)
	}
	s.wait(s.pastTTL())
	ran := false
	res2, err := e.Do(bg(), key, fp("a"), func(context.Context) (idem.Response, error) {
		ran = true
		return idem.Response{Status: 200}, nil
	})
	if ran || !errors.Is(err, idem.ErrUncertain) || !res2.Uncertain || res2.Token != res.Token {
		t.Fatalf("retry of the uncertain key: ran=%v %+v, %v; want ErrUncertain under token %d, nothing run", ran, res2, err, res.Token)
	}
	want := sampleResponse("settled")
	if err := e.Resolve(bg(), key, res.Token, &want); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	res3, err := e.Do(bg(), key, fp("a"), func(context.Context) (idem.Response, error) {
		ran = true
		return idem.Response{Status: 200}, nil
	})
	if ran || err != nil || !res3.Replayed || res3.Uncertain {
		t.Fatalf("after the resolution: ran=%v %+v, %v; want the resolved response replayed", ran, res3, err)
	}
	sameResponse(t, &res3.Response, want)
	wantEv := []idem.Transition{idem.TransitionAcquired, idem.TransitionUncertain, idem.TransitionReplayed,
		idem.TransitionResolved, idem.TransitionReplayed}
	if len(events) != len(wantEv) {
		t.Fatalf("observer saw %v, want %v", events, wantEv)
	}
	for i := range wantEv {
		if events[i] != wantEv[i] {
			t.Fatalf("observer saw %v, want %v", events, wantEv)
		}
	}
}
