package naive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// Each flaw is shown with the real idem.Engine, in the scenario the harness
// uses to catch it. Every scenario runs twice: against the design, where the
// flaw must show, and against the correct memstore, where it must not, so the
// scenario tests the store and not itself.

// scenario drives an engine on st (whose clock is clock) and reports whether
// the flaw showed, with what it observed.
type scenario func(t *testing.T, st idem.Store, clock *memstore.ManualClock) (flawed bool, observed string)

const (
	testKey = "order-42"
	testTTL = 10 * time.Second // on the manual clock
	// awaitTimeout bounds every wait of a scenario in real time.
	awaitTimeout = 10 * time.Second
	// testWindow makes CheckThenAct's gap wide enough that two Do calls
	// started together both read before either writes.
	testWindow = 100 * time.Millisecond
)

var testFP = idem.FingerprintString("POST /orders", `{"sku":"x"}`)

func TestFlawsWithEngine(t *testing.T) {
	tests := []struct {
		design   string
		scenario string
		run      scenario
	}{
		{"check-then-act", "duplicates", duplicates},
		{"cache-on-success", "duplicates", duplicates},
		{"unfenced-takeover", "gc-pause", gcPause},
		{"delete-on-error", "pause-then-fail", pauseThenFail},
		{"no-expiry", "crash-holder", crashHolder},
		{"no-heartbeat", "slow-handler", slowHandler},
		{"token-restart", "retryable-failures", releaseThenRetry},
		{"token-restart", "pause-successor-fails", pauseSuccessorFails},
		{"racy-takeover", "takeover-race", takeoverRace},
		{"unfenced-heartbeat", "stale-heartbeat", staleHeartbeat},
		{"fail-open", "duplicates", duplicates},
		{"keeps-pending", "retryable-failures", releaseThenRetry},
		{"unscoped-key", "mismatched-requests", mismatchedRequest},
		{"retries-uncertain", "uncertain-outcomes", uncertainRetried},
	}
	for _, tc := range tests {
		t.Run(tc.design+"/"+tc.scenario, func(t *testing.T) {
			t.Parallel()
			t.Run("design", func(t *testing.T) {
				clock := newClock()
				st := newTestDesign(t, tc.design, clock)
				if flawed, observed := tc.run(t, st, clock); !flawed {
					t.Fatalf("%s under %s: the flaw did not show: %s", tc.design, tc.scenario, observed)
				} else {
					t.Logf("flaw shown: %s", observed)
				}
			})
			t.Run("memstore", func(t *testing.T) {
				clock := newClock()
				st := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
				t.Cleanup(func() { st.Close() })
				if flawed, observed := tc.run(t, st, clock); flawed {
					t.Fatalf("correct store under %s: %s", tc.scenario, observed)
				}
			})
		})
	}
}

func newClock() *memstore.ManualClock {
	return memstore.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func newTestDesign(t *testing.T, name string, clock idem.Clock) idem.Store {
	t.Helper()
	switch name {
	case "check-then-act":
		return NewCheckThenAct(Options{Clock: clock, Window: testWindow})
	case "racy-takeover":
		return NewRacyTakeover(Options{Clock: clock, Window: testWindow})
	case "fail-open":
		// The second Acquire, the duplicate's, meets the backend error.
		return NewFailOpen(Options{Clock: clock, FailEvery: 2})
	}
	st, err := New(name, clock)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(awaitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func respond(body string) idem.Response { return idem.Response{Status: 201, Body: []byte(body)} }

// newGate returns a channel that open closes, once; the end of the test
// opens it too, so no goroutine stays blocked on it after a failure.
func newGate(t *testing.T) (gate <-chan struct{}, open func()) {
	ch := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return ch, open
}

type outcome struct {
	res idem.Result
	err error
}

// doAsync runs e.Do in a goroutine; the outcome arrives on the channel.
func doAsync(ctx context.Context, e *idem.Engine, fn idem.Func) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := e.Do(ctx, testKey, testFP, fn)
		ch <- outcome{res, err}
	}()
	return ch
}

// runHeld starts an execution of e whose function, once it runs, waits
// until release is called and then completes with body name. It returns
// when the function runs; the outcome arrives on the channel.
func runHeld(t *testing.T, e *idem.Engine, name string) (done <-chan outcome, release func()) {
	t.Helper()
	running := make(chan struct{})
	gate, release := newGate(t)
	done = doAsync(t.Context(), e, func(context.Context) (idem.Response, error) {
		close(running)
		<-gate
		return respond(name), nil
	})
	await(t, running, name+" to run")
	return done, release
}

// crashHolderA makes holder A take the key and crash before its function
// runs, leaving its lease behind.
func crashHolderA(t *testing.T, e *idem.Engine) {
	t.Helper()
	ctx := context.WithValue(t.Context(), crashKey{}, true)
	if _, err := e.Do(ctx, testKey, testFP, func(context.Context) (idem.Response, error) {
		t.Error("crashed holder ran its function")
		return idem.Response{}, nil
	}); !errors.Is(err, idem.ErrAborted) {
		t.Fatalf("A: err = %v, want ErrAborted", err)
	}
}

// stall makes the fault hook stall an execution before its function runs,
// with no heartbeat going: a GC pause. The execution's ctx carries it.
type stall struct {
	reached chan struct{}   // closed by the hook when the stall begins
	resume  <-chan struct{} // ends the stall
	wake    func()          // closes resume
}

type stallKey struct{}
type crashKey struct{}

// withStall returns a context of t whose execution the hook stalls.
func withStall(t *testing.T) (context.Context, *stall) {
	s := &stall{reached: make(chan struct{})}
	s.resume, s.wake = newGate(t)
	return context.WithValue(t.Context(), stallKey{}, s), s
}

func faultHook(ctx context.Context, p idem.Point, l idem.Lease) error {
	if p != idem.PointBeforeFn {
		return nil
	}
	if s, ok := ctx.Value(stallKey{}).(*stall); ok {
		close(s.reached)
		<-s.resume
	}
	if ctx.Value(crashKey{}) != nil {
		return errors.New("holder crashed")
	}
	return nil
}

func newEngine(st idem.Store, clock idem.Clock, opts ...idem.Option) *idem.Engine {
	base := []idem.Option{idem.WithLeaseTTL(testTTL), idem.WithHeartbeat(-1), idem.WithHook(faultHook), idem.WithClock(clock)}
	return idem.New(st, append(base, opts...)...)
}

// duplicates: two deliveries of one request at the same moment. A function
// that runs blocks until both Do calls have either started their function or
// returned, so both outcomes are decided before either execution finishes.
func duplicates(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	var runs atomic.Int32
	events := make(chan string, 4)
	release, open := newGate(t)
	fn := func(ctx context.Context) (idem.Response, error) {
		runs.Add(1)
		events <- "run"
		<-release
		return respond("ok"), nil
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := e.Do(t.Context(), testKey, testFP, fn)
			events <- "return"
			errs <- err
		}()
	}
	await(t, events, "the first event")
	await(t, events, "the second event")
	open()
	err1, err2 := await(t, errs, "a Do to return"), await(t, errs, "a Do to return")
	return runs.Load() > 1, fmt.Sprintf("the function ran %d times for one key (errors: %v; %v)", runs.Load(), err1, err2)
}

// gcPause: holder A stalls past its lease; B takes over and completes; A
// wakes up and completes too.
func gcPause(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	ctx, s := withStall(t)
	a := doAsync(ctx, e, func(context.Context) (idem.Response, error) { return respond("A"), nil })
	await(t, s.reached, "A to stall")
	clock.Advance(2 * testTTL)
	resB, err := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) { return respond("B"), nil })
	if err != nil || resB.Replayed {
		t.Fatalf("B: %+v, %v; want it to take over and run", resB, err)
	}
	s.wake()
	oa := await(t, a, "A to return")
	rec, err := st.Get(t.Context(), testKey)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	observed := fmt.Sprintf("A (token %d) finished with err=%v; B (token %d) completed; stored: %q with token %d",
		oa.res.Token, oa.err, resB.Token, rec.Response.Body, rec.Token)
	return oa.err == nil || string(rec.Response.Body) != "B", observed
}

// pauseThenFail: holder A stalls past its lease; B takes over and is still
// running when A wakes, fails with a retryable error and releases; C comes.
func pauseThenFail(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	ctx, s := withStall(t)
	a := doAsync(ctx, e, func(context.Context) (idem.Response, error) { return idem.Response{}, errors.New("upstream timeout") })
	await(t, s.reached, "A to stall")
	clock.Advance(2 * testTTL)
	b, releaseB := runHeld(t, e, "B")
	s.wake()
	oa := await(t, a, "A to return")
	var cRan bool
	resC, errC := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		cRan = true
		return respond("C"), nil
	})
	releaseB()
	ob := await(t, b, "B to return")
	observed := fmt.Sprintf("A (token %d) failed: %v; with B (token %d) still running, C ran=%v (token %d, err=%v); then B: err=%v",
		oa.res.Token, oa.err, ob.res.Token, cRan, resC.Token, errC, ob.err)
	return cRan, observed
}

// crashHolder: holder A crashes before its function; nobody else ever
// completes the key unless the store lets a later request take over.
func crashHolder(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	crashHolderA(t, e)
	retry := func() error {
		_, err := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) { return respond("B"), nil })
		return err
	}
	clock.Advance(2 * testTTL)
	err := retry()
	if !errors.Is(err, idem.ErrInProgress) {
		return false, fmt.Sprintf("retry one lease TTL after the crash: err = %v", err)
	}
	// Forever: a year later, after a sweep.
	clock.Advance(365 * 24 * time.Hour)
	if sw, ok := st.(idem.Sweeper); ok {
		if _, err := sw.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	err2 := retry()
	return errors.Is(err2, idem.ErrInProgress), fmt.Sprintf("retry one TTL after the crash: %v; a year later: %v", err, err2)
}

// beatSpy passes calls to a store and signals every Heartbeat. Before the
// first Heartbeat reaches the store it waits for ready, closed by the function
// under the lease, so every counted heartbeat renews a lease whose function is
// running.
type beatSpy struct {
	idem.Store
	ready <-chan struct{}
	beats chan struct{}
}

func (s beatSpy) Heartbeat(ctx context.Context, l *idem.Lease, ttl time.Duration) error {
	<-s.ready
	err := s.Store.Heartbeat(ctx, l, ttl)
	select {
	case s.beats <- struct{}{}:
	default:
	}
	return err
}

// slowHandler: A's function runs 1.5 lease TTLs, healthy, with the engine's
// heartbeat going. The clock moves one second at a time, each step only
// after a heartbeat that started after the previous step, so a renewing
// store always keeps A's lease at least 8 s ahead. Then B comes, through an
// engine of its own.
func slowHandler(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	aRunning := make(chan struct{})
	spy := beatSpy{Store: st, ready: aRunning, beats: make(chan struct{}, 1)}
	eA := newEngine(spy, clock, idem.WithHeartbeat(2*time.Millisecond))
	aRelease, releaseA := newGate(t)
	a := doAsync(t.Context(), eA, func(context.Context) (idem.Response, error) {
		close(aRunning)
		<-aRelease
		return respond("A"), nil
	})
	await(t, aRunning, "A to run")
	for range 15 {
		select {
		case <-spy.beats:
		default:
		}
		await(t, spy.beats, "a heartbeat")
		clock.Advance(time.Second)
	}
	var bRan bool
	resB, errB := newEngine(st, clock).Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		bRan = true
		return respond("B"), nil
	})
	releaseA()
	oa := await(t, a, "A to return")
	return bRan, fmt.Sprintf("15 s into A's run (token %d) with a %s lease: B ran=%v (token %d, err=%v); then A: err=%v",
		oa.res.Token, testTTL, bRan, resB.Token, errB, oa.err)
}
