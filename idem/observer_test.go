package idem_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idembench/idembench/idem"
)

// eventLog is an Observer that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []idem.Event
}

func (l *eventLog) observe(_ context.Context, ev idem.Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// names returns the transitions seen, in order.
func (l *eventLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events {
		out = append(out, ev.Transition.String())
	}
	return out
}

func (l *eventLog) find(t idem.Transition) (idem.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.events {
		if ev.Transition == t {
			return ev, true
		}
	}
	return idem.Event{}, false
}

func TestObserverSeesEveryTransitionOfDo(t *testing.T) {
	retryable := func(context.Context) (idem.Response, error) { return idem.Response{}, errors.New("try later") }
	permanent := func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 400}, idem.Permanent(errors.New("bad card"))
	}
	fpB := idem.FingerprintString("POST", "/pay", `{"amount":2}`)
	tests := []struct {
		name  string
		calls func(e *idem.Engine)
		want  []string
	}{
		{"claim, complete, replay, mismatch", func(e *idem.Engine) {
			_, _ = e.Do(context.Background(), "k", fpA, ok("x"))
			_, _ = e.Do(context.Background(), "k", fpA, ok("y"))
			_, _ = e.Do(context.Background(), "k", fpB, ok("z"))
		}, []string{"acquired", "completed", "replayed", "mismatch"}},
		{"retryable error releases", func(e *idem.Engine) {
			_, _ = e.Do(context.Background(), "k", fpA, retryable)
		}, []string{"acquired", "released"}},
		{"permanent error is stored", func(e *idem.Engine) {
			_, _ = e.Do(context.Background(), "k", fpA, permanent)
			_, _ = e.Do(context.Background(), "k", fpA, ok("y"))
		}, []string{"acquired", "failed", "replayed"}},
		{"panic releases", func(e *idem.Engine) {
			func() {
				defer func() { _ = recover() }()
				_, _ = e.Do(context.Background(), "k", fpA, func(context.Context) (idem.Response, error) { panic("boom") })
			}()
		}, []string{"acquired", "released"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log eventLog
			tt.calls(idem.New(newStore(t), idem.WithObserver(log.observe)))
			if got := log.names(); !slices.Equal(got, tt.want) {
				t.Fatalf("transitions %v, want %v", got, tt.want)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			for _, ev := range log.events {
				if ev.Key != "k" || ev.Token == 0 {
					t.Fatalf("event %+v: want key k and a token", ev)
				}
			}
		})
	}
}

func TestObserverSeesTakeOverLeaseLossAndRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		st := newStore(t)
		recovered := func(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
			return idem.Response{Status: 200, Body: []byte("found")}, true, nil
		}
		e := idem.New(st, idem.WithLeaseTTL(100*time.Millisecond), idem.WithHeartbeat(-1),
			idem.WithObserver(log.observe), idem.WithRecovery(recovered))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) {
				time.Sleep(300 * time.Millisecond)
				return idem.Response{Status: 200}, nil
			})
		}()
		time.Sleep(150 * time.Millisecond)
		if _, err := e.Do(context.Background(), "k", fpA, ok("fresh")); err != nil {
			t.Fatal(err)
		}
		<-done
		want := []string{"acquired", "taken_over", "recovered", "completed", "lease_lost"}
		if got := log.names(); !slices.Equal(got, want) {
			t.Fatalf("transitions %v, want %v", got, want)
		}
		first, _ := log.find(idem.TransitionAcquired)
		took, _ := log.find(idem.TransitionTakenOver)
		if took.PrevToken != first.Token || took.Token <= first.Token {
			t.Fatalf("take-over %+v after grant %+v: want PrevToken = first token < Token", took, first)
		}
		lost, _ := log.find(idem.TransitionLeaseLost)
		if lost.Token != first.Token || lost.Op != idem.OpComplete || !errors.Is(lost.Err, idem.ErrLeaseLost) {
			t.Fatalf("lease lost event %+v: want the first token, op complete, ErrLeaseLost", lost)
		}
		if lost.Func != 300*time.Millisecond {
			t.Fatalf("lease lost event: Func = %s, want the function's 300ms", lost.Func)
		}
		settle()
	})
}

func TestObserverSeesHeartbeatsAndConflicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		st := newStore(t)
		e := idem.New(st, idem.WithLeaseTTL(90*time.Millisecond), idem.WithHeartbeat(30*time.Millisecond), idem.WithObserver(log.observe))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) {
				time.Sleep(200 * time.Millisecond)
				l, _ := idem.LeaseFrom(ctx)
				// Someone removes the record: the next renewal is refused.
				_ = st.Release(context.Background(), &l)
				<-ctx.Done()
				return idem.Response{Status: 200}, nil
			})
		}()
		time.Sleep(50 * time.Millisecond)
		if _, err := e.Do(context.Background(), "k", fpA, ok("dup")); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("duplicate: %v, want ErrInProgress", err)
		}
		<-done
		for _, tr := range []idem.Transition{idem.TransitionConflict, idem.TransitionHeartbeat, idem.TransitionHeartbeatRefused} {
			ev, found := log.find(tr)
			if !found {
				t.Fatalf("no %s event in %v", tr, log.names())
			}
			if ev.Token == 0 {
				t.Fatalf("%s event without token: %+v", tr, ev)
			}
		}
		settle()
	})
}

// brokenAcquire is a real memstore whose Acquire fails, as a store whose
// server went away does.
type brokenAcquire struct{ idem.Store }

var errStoreDown = errors.New("store down")

func (brokenAcquire) Acquire(context.Context, string, idem.Fingerprint, time.Duration) (*idem.Lease, *idem.Record, error) {
	return nil, nil, errStoreDown
}

func TestObserverSeesBackendErrors(t *testing.T) {
	var log eventLog
	e := idem.New(brokenAcquire{newStore(t)}, idem.WithObserver(log.observe))
	if _, err := e.Do(context.Background(), "k", fpA, ok("x")); !errors.Is(err, errStoreDown) {
		t.Fatalf("Do: %v, want the store's error", err)
	}
	ev, found := log.find(idem.TransitionBackendError)
	if !found || ev.Op != idem.OpAcquire || !errors.Is(ev.Err, errStoreDown) {
		t.Fatalf("events %v: want backend_error on acquire with the error", log.names())
	}
}

func TestWithObserverChainsObservers(t *testing.T) {
	var a, b eventLog
	e := idem.New(newStore(t), idem.WithObserver(a.observe), idem.WithObserver(nil), idem.WithObserver(b.observe))
	_, _ = e.Do(context.Background(), "k", fpA, ok("x"))
	if !slices.Equal(a.names(), b.names()) || len(a.names()) != 2 {
		t.Fatalf("observers saw %v and %v, want the same two transitions", a.names(), b.names())
	}
}

func TestTransitionNames(t *testing.T) {
	seen := map[string]bool{}
	for _, tr := range idem.Transitions() {
		n := tr.String()
		if n == "" || seen[n] || n[0] == 't' && n[1] == 'r' {
			t.Fatalf("transition %d has name %q (duplicate or unnamed)", tr, n)
		}
		seen[n] = true
	}
	if len(seen) != 15 {
		t.Fatalf("%d transitions, want 15", len(seen))
	}
}

func TestWithoutDurationsLeavesThemZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log eventLog
		e := idem.New(newStore(t), idem.WithObserver(log.observe), idem.WithoutDurations())
		_, _ = e.Do(context.Background(), "k", fpA, func(context.Context) (idem.Response, error) {
			time.Sleep(time.Second)
			return idem.Response{Status: 200}, nil
		})
		ev, found := log.find(idem.TransitionCompleted)
		if !found || ev.Func != 0 || ev.Claim != 0 || ev.Finish != 0 {
			t.Fatalf("completed event %+v: want zero durations", ev)
		}
		settle()
	})
}

func TestEventAnswersClaim(t *testing.T) {
	cases := []struct {
		ev   idem.Event
		want bool
	}{
		{idem.Event{Transition: idem.TransitionAcquired}, true},
		{idem.Event{Transition: idem.TransitionTakenOver}, true},
		{idem.Event{Transition: idem.TransitionReplayed}, true},
		{idem.Event{Transition: idem.TransitionConflict}, true},
		{idem.Event{Transition: idem.TransitionMismatch}, true},
		{idem.Event{Transition: idem.TransitionBackendError, Op: idem.OpAcquire}, true},
		{idem.Event{Transition: idem.TransitionBackendError, Op: idem.OpComplete}, false},
		{idem.Event{Transition: idem.TransitionCompleted}, false},
		{idem.Event{Transition: idem.TransitionHeartbeat}, false},
		{idem.Event{Transition: idem.TransitionReleased}, false},
	}
	for _, c := range cases {
		if got := c.ev.AnswersClaim(); got != c.want {
			t.Errorf("%v (op %q): AnswersClaim %t, want %t", c.ev.Transition, c.ev.Op, got, c.want)
		}
	}
}
