package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// noLister hides the memstore's optional capabilities.
type noLister struct{ idem.Store }

func TestRecoverAbandonedNeedsCapabilities(t *testing.T) {
	store := memstore.New(memstore.Options{SweepInterval: -1})
	defer store.Close()
	hook := idem.WithRecovery(func(context.Context, idem.Lease) (idem.Response, bool, error) { return idem.Response{}, false, nil })
	tests := []struct {
		name string
		eng  *idem.Engine
		want error
	}{
		{"no lister", idem.New(noLister{store}, hook), idem.ErrNoLister},
		{"no recovery hook", idem.New(store), idem.ErrNoRecovery},
	}
	for _, tt := range tests {
		if _, err := tt.eng.RecoverAbandoned(context.Background(), 0, 0); !errors.Is(err, tt.want) {
			t.Errorf("%s: RecoverAbandoned = %v, want %v", tt.name, err, tt.want)
		}
		if err := tt.eng.RunCompleter(context.Background(), time.Millisecond, 0); !errors.Is(err, tt.want) {
			t.Errorf("%s: RunCompleter = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestRecoverAbandonedReport checks the counts and transitions of one pass:
// a key whose effect happened is completed, one whose effect did not is
// released, a hook error leaves the key for the next pass.
func TestRecoverAbandonedReport(t *testing.T) {
	clock := memstore.NewManualClock(time.Unix(1e9, 0))
	store := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
	defer store.Close()
	for _, k := range []string{"done", "not-done", "broken"} {
		if _, _, err := store.Acquire(context.Background(), k, fpA, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	var log eventLog
	eng := idem.New(store, idem.WithObserver(log.observe), idem.WithRecovery(func(_ context.Context, l idem.Lease) (idem.Response, bool, error) {
		switch l.Key {
		case "done":
			return idem.Response{Status: 200, Body: []byte("r")}, true, nil
		case "broken":
			return idem.Response{}, false, errors.New("ledger down")
		}
		return idem.Response{}, false, nil
	}))
	rep, err := eng.RecoverAbandoned(context.Background(), 30*time.Second, 0)
	if err == nil {
		t.Fatal("the hook error was not returned")
	}
	if want := (idem.AbandonedReport{Found: 3, Completed: 1, Released: 1, Errors: 1}); rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	if rec, err := store.Get(context.Background(), "done"); err != nil || rec.Status != idem.StatusCompleted || string(rec.Response.Body) != "r" {
		t.Fatalf("done: %+v %v", rec, err)
	}
	if _, err := store.Get(context.Background(), "not-done"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("not-done: %v, want released", err)
	}
	if rec, err := store.Get(context.Background(), "broken"); err != nil || rec.Status != idem.StatusInProgress {
		t.Fatalf("broken: %+v %v, want still in progress", rec, err)
	}
	if _, ok := log.find(idem.TransitionRecovered); !ok {
		t.Fatalf("no recovered transition in %v", log.names())
	}
	if rep, _ := eng.RecoverAbandoned(context.Background(), time.Hour, 0); rep.Found != 0 {
		t.Fatalf("older than an hour: %+v", rep)
	}
}
