package idem_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// newStore returns a memstore on the (possibly synctest-faked) system clock.
func newStore(t *testing.T) *memstore.Store {
	s := memstore.New(memstore.Options{SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	return s
}

var fpA = idem.FingerprintString("POST", "/pay", `{"amount":1}`)

// settle lets a synctest bubble's background goroutines (the engine's
// heartbeat scheduler) see that no execution runs and exit.
func settle() { time.Sleep(time.Hour) }

func ok(body string) idem.Func {
	return func(ctx context.Context) (idem.Response, error) {
		return idem.Response{Status: 201, Body: []byte(body)}, nil
	}
}

// counting wraps fn and counts its runs.
func counting(n *atomic.Int32, fn idem.Func) idem.Func {
	return func(ctx context.Context) (idem.Response, error) {
		n.Add(1)
		return fn(ctx)
	}
}

func TestDoRejectsInvalidKeyWithoutTouchingStore(t *testing.T) {
	st := newStore(t)
	e := idem.New(st)
	for _, key := range []string{"", "has space", "tab\t", strings.Repeat("k", idem.MaxKeyLen+1), "ünicode"} {
		_, err := e.Do(context.Background(), key, fpA, ok("x"))
		if !errors.Is(err, idem.ErrInvalidKey) {
			t.Errorf("Do(%q): err = %v, want ErrInvalidKey", key, err)
		}
	}
	if n := st.Len(); n != 0 {
		t.Fatalf("store holds %d records after invalid keys, want 0", n)
	}
}

func TestDoScopeSeparatesTenants(t *testing.T) {
	st := newStore(t)
	a := idem.New(st, idem.WithScope("tenant-a"))
	b := idem.New(st, idem.WithScope("tenant-b"))
	var runs atomic.Int32
	for _, e := range []*idem.Engine{a, b} {
		if _, err := e.Do(context.Background(), "k1", fpA, counting(&runs, ok("x"))); err != nil {
			t.Fatal(err)
		}
	}
	if runs.Load() != 2 {
		t.Fatalf("same key in two scopes ran %d times, want 2", runs.Load())
	}
	if _, err := st.Get(context.Background(), "tenant-a:k1"); err != nil {
		t.Fatalf("scoped record: %v", err)
	}
	if _, err := idem.New(st, idem.WithScope("bad:scope")).Do(context.Background(), "k", fpA, ok("x")); !errors.Is(err, idem.ErrInvalidKey) {
		t.Fatalf("scope with separator: err = %v, want ErrInvalidKey", err)
	}
}

func TestDoReplaysCompletedResponse(t *testing.T) {
	e := idem.New(newStore(t))
	var runs atomic.Int32
	first, err := e.Do(context.Background(), "k", fpA, counting(&runs, ok("paid")))
	if err != nil || first.Replayed {
		t.Fatalf("first Do = %+v, %v", first, err)
	}
	second, err := e.Do(context.Background(), "k", fpA, counting(&runs, ok("other")))
	if err != nil {
		t.Fatal(err)
	}
	if !second.Replayed || string(second.Response.Body) != "paid" || second.Token != first.Token {
		t.Fatalf("second Do = %+v, want replay of %q with token %d", second, "paid", first.Token)
	}
	if runs.Load() != 1 {
		t.Fatalf("fn ran %d times, want 1", runs.Load())
	}
}

func TestDoRejectsDifferentRequestWithSameKey(t *testing.T) {
	e := idem.New(newStore(t))
	if _, err := e.Do(context.Background(), "k", fpA, ok("x")); err != nil {
		t.Fatal(err)
	}
	_, err := e.Do(context.Background(), "k", idem.FingerprintString("other"), ok("y"))
	if !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("err = %v, want ErrFingerprintMismatch", err)
	}
}

// blockingFn returns a Func that signals started and waits for release.
func blockingFn(started chan<- struct{}, release <-chan struct{}, body string) idem.Func {
	return func(ctx context.Context) (idem.Response, error) {
		close(started)
		<-release
		return idem.Response{Status: 200, Body: []byte(body)}, nil
	}
}

func TestDoConcurrentDuplicateGetsInProgress(t *testing.T) {
	e := idem.New(newStore(t))
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := e.Do(context.Background(), "k", fpA, blockingFn(started, release, "x"))
		done <- err
	}()
	<-started
	_, err := e.Do(context.Background(), "k", fpA, ok("y"))
	if !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("duplicate during execution: err = %v, want ErrInProgress", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDoConflictWaitReplaysAfterHolderFinishes(t *testing.T) {
	e := idem.New(newStore(t), idem.WithConflictWait(5*time.Second, time.Millisecond))
	started, release := make(chan struct{}), make(chan struct{})
	go func() { _, _ = e.Do(context.Background(), "k", fpA, blockingFn(started, release, "first")) }()
	<-started
	time.AfterFunc(20*time.Millisecond, func() { close(release) })
	res, err := e.Do(context.Background(), "k", fpA, ok("second"))
	if err != nil || !res.Replayed || string(res.Response.Body) != "first" {
		t.Fatalf("waiting duplicate = %+v, %v; want replay of %q", res, err, "first")
	}
}

func TestDoConflictWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := idem.New(newStore(t), idem.WithConflictWait(100*time.Millisecond, 10*time.Millisecond))
		started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.Do(context.Background(), "k", fpA, blockingFn(started, release, "x"))
		}()
		<-started
		t0 := time.Now()
		_, err := e.Do(context.Background(), "k", fpA, ok("y"))
		if !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("err = %v, want ErrInProgress after the wait bound", err)
		}
		if waited := time.Since(t0); waited < 100*time.Millisecond || waited > 200*time.Millisecond {
			t.Fatalf("waited %v, want about 100ms", waited)
		}
		close(release)
		<-done
		settle()
	})
}

func TestDoHeartbeatKeepsSlowFunctionsLease(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat time.Duration
		wantTaken bool
	}{
		{"with heartbeat", 0, false},
		{"without heartbeat", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newStore(t)
				e := idem.New(st, idem.WithLeaseTTL(100*time.Millisecond), idem.WithHeartbeat(tc.heartbeat))
				var runs atomic.Int32
				slow := counting(&runs, func(ctx context.Context) (idem.Response, error) {
					time.Sleep(500 * time.Millisecond) // five lease TTLs
					return idem.Response{Status: 200}, nil
				})
				go func() { _, _ = e.Do(context.Background(), "k", fpA, slow) }()
				time.Sleep(300 * time.Millisecond)
				_, err := e.Do(context.Background(), "k", fpA, counting(&runs, ok("dup")))
				taken := err == nil
				if taken != tc.wantTaken {
					t.Fatalf("duplicate at 3 TTLs: err = %v; taken over = %v, want %v", err, taken, tc.wantTaken)
				}
				if !taken && !errors.Is(err, idem.ErrInProgress) {
					t.Fatalf("err = %v, want ErrInProgress", err)
				}
				time.Sleep(time.Second)
				if want := int32(1); tc.wantTaken {
					want = 2
					if runs.Load() != want {
						t.Fatalf("fn ran %d times, want %d", runs.Load(), want)
					}
				} else if runs.Load() != want {
					t.Fatalf("fn ran %d times, want %d", runs.Load(), want)
				}
				settle()
			})
		})
	}
}

func TestDoLeaseLossCancelsFunctionContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStore(t)
		e := idem.New(st, idem.WithLeaseTTL(90*time.Millisecond), idem.WithHeartbeat(30*time.Millisecond))
		var cause error
		fn := func(ctx context.Context) (idem.Response, error) {
			l, _ := idem.LeaseFrom(ctx)
			// Someone else removes the record: the next heartbeat finds the lease lost.
			if err := st.Release(context.Background(), &l); err != nil {
				t.Errorf("Release: %v", err)
			}
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
			case <-time.After(time.Second):
			}
			return idem.Response{Status: 200}, nil
		}
		_, err := e.Do(context.Background(), "k", fpA, fn)
		if !errors.Is(cause, idem.ErrLeaseLost) {
			t.Fatalf("fn context cause = %v, want ErrLeaseLost", cause)
		}
		if !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("Do err = %v, want ErrLeaseLost", err)
		}
		settle()
	})
}

func TestDoStaleCompletionIsRefusedAndNotCached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStore(t)
		e := idem.New(st, idem.WithLeaseTTL(100*time.Millisecond), idem.WithHeartbeat(-1))
		done := make(chan struct{})
		var staleRes idem.Result
		var staleErr error
		go func() {
			defer close(done)
			staleRes, staleErr = e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) {
				time.Sleep(300 * time.Millisecond)
				return idem.Response{Status: 200, Body: []byte("stale")}, nil
			})
		}()
		time.Sleep(150 * time.Millisecond)
		if _, err := e.Do(context.Background(), "k", fpA, ok("fresh")); err != nil {
			t.Fatalf("take-over: %v", err)
		}
		<-done
		if !errors.Is(staleErr, idem.ErrLeaseLost) || string(staleRes.Response.Body) != "stale" {
			t.Fatalf("stale Do = %+v, %v; want its own response and ErrLeaseLost", staleRes, staleErr)
		}
		rec, err := st.Get(context.Background(), "k")
		if err != nil || string(rec.Response.Body) != "fresh" {
			t.Fatalf("stored = %+v, %v; want the successor's response", rec, err)
		}
		settle()
	})
}

// crashAt returns a hook that aborts the first execution at point p.
func crashAt(p idem.Point) idem.Hook {
	var once sync.Once
	return func(ctx context.Context, at idem.Point, l idem.Lease) error {
		crash := false
		if at == p {
			once.Do(func() { crash = true })
		}
		if crash {
			return errors.New("simulated crash")
		}
		return nil
	}
}

func TestDoRecoveryPreventsSecondRunAfterCrash(t *testing.T) {
	for _, withRecovery := range []bool{false, true} {
		t.Run(map[bool]string{false: "no recovery", true: "recovery"}[withRecovery], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var effects sync.Map // key -> response of the applied effect
				var runs atomic.Int32
				fn := func(ctx context.Context) (idem.Response, error) {
					runs.Add(1)
					l, _ := idem.LeaseFrom(ctx)
					resp := idem.Response{Status: 201, Body: []byte("effect")}
					effects.Store(l.Key, resp)
					return resp, nil
				}
				opts := []idem.Option{idem.WithLeaseTTL(100 * time.Millisecond), idem.WithHook(crashAt(idem.PointAfterFn))}
				if withRecovery {
					opts = append(opts, idem.WithRecovery(func(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
						if v, ok := effects.Load(l.Key); ok {
							return v.(idem.Response), true, nil
						}
						return idem.Response{}, false, nil
					}))
				}
				e := idem.New(newStore(t), opts...)
				if _, err := e.Do(context.Background(), "k", fpA, fn); !errors.Is(err, idem.ErrAborted) {
					t.Fatalf("crashing Do: err = %v, want ErrAborted", err)
				}
				time.Sleep(150 * time.Millisecond) // the crashed holder's lease expires
				res, err := e.Do(context.Background(), "k", fpA, fn)
				if err != nil {
					t.Fatal(err)
				}
				want := int32(2)
				if withRecovery {
					want = 1
					if !res.Recovered || string(res.Response.Body) != "effect" {
						t.Fatalf("retry = %+v, want recovered response", res)
					}
				}
				if runs.Load() != want {
					t.Fatalf("fn ran %d times, want %d", runs.Load(), want)
				}
				settle()
			})
		})
	}
}

func TestDoPermanentErrorIsStoredAndReplayed(t *testing.T) {
	e := idem.New(newStore(t))
	declined := errors.New("card declined")
	var runs atomic.Int32
	fn := counting(&runs, func(ctx context.Context) (idem.Response, error) {
		return idem.Response{Status: 402, Body: []byte("declined")}, idem.Permanent(declined)
	})
	res, err := e.Do(context.Background(), "k", fpA, fn)
	if !errors.Is(err, declined) || !res.Failed || res.Replayed {
		t.Fatalf("first = %+v, %v; want Failed with the fn error", res, err)
	}
	res, err = e.Do(context.Background(), "k", fpA, fn)
	if err != nil || !res.Failed || !res.Replayed || res.Response.Status != 402 {
		t.Fatalf("second = %+v, %v; want replayed failure 402", res, err)
	}
	if runs.Load() != 1 {
		t.Fatalf("fn ran %d times, want 1", runs.Load())
	}
}

func TestDoRetryableErrorReleasesKey(t *testing.T) {
	st := newStore(t)
	e := idem.New(st)
	flaky := errors.New("upstream timeout")
	_, err := e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) {
		return idem.Response{}, flaky
	})
	if !errors.Is(err, flaky) {
		t.Fatalf("err = %v, want the fn error", err)
	}
	if _, err := st.Get(context.Background(), "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("after retryable error: Get err = %v, want ErrNotFound", err)
	}
	res, err := e.Do(context.Background(), "k", fpA, ok("second try"))
	if err != nil || res.Replayed || string(res.Response.Body) != "second try" {
		t.Fatalf("retry = %+v, %v; want a fresh execution", res, err)
	}
}

// TestDoAmbiguousErrorKeepsKeyForRecovery: a function that cannot tell
// whether its effect happened (an Ambiguous error) does not release the
// key, as a plain retryable error would; the next attempt after the lease
// expired takes over and the recovery hook finds the effect, so fn does not
// run twice. Releasing instead (the contrast) runs it twice.
func TestDoAmbiguousErrorKeepsKeyForRecovery(t *testing.T) {
	for _, ambiguous := range []bool{true, false} {
		t.Run(map[bool]string{true: "ambiguous", false: "retryable"}[ambiguous], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newStore(t)
				var effects sync.Map // key -> response of the applied effect
				var runs atomic.Int32
				lost := errors.New("effect's acknowledgement lost")
				fn := func(ctx context.Context) (idem.Response, error) {
					l, _ := idem.LeaseFrom(ctx)
					resp := idem.Response{Status: 201, Body: []byte("effect")}
					effects.Store(l.Key, resp) // the effect happens...
					if runs.Add(1) == 1 {      // ...but the first run cannot tell
						if ambiguous {
							return idem.Response{}, idem.MarkAmbiguous(lost)
						}
						return idem.Response{}, lost
					}
					return resp, nil
				}
				e := idem.New(st, idem.WithLeaseTTL(100*time.Millisecond),
					idem.WithRecovery(func(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
						if v, ok := effects.Load(l.Key); ok {
							return v.(idem.Response), true, nil
						}
						return idem.Response{}, false, nil
					}))
				if _, err := e.Do(context.Background(), "k", fpA, fn); !errors.Is(err, lost) || idem.Ambiguous(err) != ambiguous {
					t.Fatalf("first Do: err = %v, want the fn error", err)
				}
				rec, err := st.Get(context.Background(), "k")
				if ambiguous && (err != nil || rec.Status != idem.StatusInProgress) {
					t.Fatalf("after an ambiguous error: record %+v, %v; want the key still in progress", rec, err)
				}
				if !ambiguous && !errors.Is(err, idem.ErrNotFound) {
					t.Fatalf("after a retryable error: Get err = %v, want ErrNotFound (released)", err)
				}
				if _, err := e.Do(context.Background(), "k", fpA, fn); ambiguous && !errors.Is(err, idem.ErrInProgress) {
					t.Fatalf("retry within the lease: err = %v, want ErrInProgress", err)
				}
				time.Sleep(150 * time.Millisecond) // the lease expires
				res, err := e.Do(context.Background(), "k", fpA, fn)
				if err != nil || string(res.Response.Body) != "effect" {
					t.Fatalf("retry after the lease: %+v, %v", res, err)
				}
				want := int32(2)
				if ambiguous {
					want = 1
					if !res.Recovered {
						t.Fatalf("retry after the lease = %+v, want a take-over answered by recovery", res)
					}
				}
				if runs.Load() != want {
					t.Fatalf("fn ran %d times, want %d", runs.Load(), want)
				}
				settle()
			})
		})
	}
}

func TestDoCustomClassifier(t *testing.T) {
	e := idem.New(newStore(t), idem.WithClassifier(func(error) bool { return true }))
	res, err := e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) {
		return idem.Response{Status: 400}, errors.New("bad")
	})
	if err == nil || !res.Failed {
		t.Fatalf("= %+v, %v; want a stored failure", res, err)
	}
}

func TestDoPanicReleasesKey(t *testing.T) {
	st := newStore(t)
	e := idem.New(st)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic was swallowed")
			}
		}()
		_, _ = e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) { panic("boom") })
	}()
	if _, err := st.Get(context.Background(), "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("after panic: Get err = %v, want ErrNotFound (key released)", err)
	}
}

func TestDoOversizedResponseIsRefusedAndNotRerun(t *testing.T) {
	e := idem.New(newStore(t), idem.WithMaxResponseSize(10))
	var runs atomic.Int32
	fn := counting(&runs, ok("this body is longer than ten bytes"))
	res, err := e.Do(context.Background(), "k", fpA, fn)
	if !errors.Is(err, idem.ErrResponseTooLarge) || string(res.Response.Body) != "this body is longer than ten bytes" {
		t.Fatalf("= %+v, %v; want ErrResponseTooLarge with the full response", res, err)
	}
	res, err = e.Do(context.Background(), "k", fpA, fn)
	if err != nil || !res.Failed || res.Response.Status != 500 || !strings.Contains(string(res.Response.Body), "too large") {
		t.Fatalf("retry = %+v, %v; want replayed 500 naming the cause", res, err)
	}
	if runs.Load() != 1 {
		t.Fatalf("fn ran %d times, want 1", runs.Load())
	}
}

func TestDoAbortLeavesLeaseInPlace(t *testing.T) {
	st := newStore(t)
	e := idem.New(st, idem.WithHook(crashAt(idem.PointAfterAcquire)))
	var runs atomic.Int32
	_, err := e.Do(context.Background(), "k", fpA, counting(&runs, ok("x")))
	if !errors.Is(err, idem.ErrAborted) || runs.Load() != 0 {
		t.Fatalf("err = %v runs = %d; want ErrAborted before fn", err, runs.Load())
	}
	rec, err := st.Get(context.Background(), "k")
	if err != nil || rec.Status != idem.StatusInProgress {
		t.Fatalf("record = %+v, %v; want the crashed holder's lease", rec, err)
	}
}

func TestDoPassesLeaseToFunction(t *testing.T) {
	e := idem.New(newStore(t))
	var got idem.Lease
	res, err := e.Do(context.Background(), "k", fpA, func(ctx context.Context) (idem.Response, error) {
		got, _ = idem.LeaseFrom(ctx)
		return idem.Response{Status: 200}, nil
	})
	if err != nil || got.Key != "k" || got.Token == 0 || got.Token != res.Token {
		t.Fatalf("lease in fn = %+v, result token %d, err %v", got, res.Token, err)
	}
	if _, ok := idem.LeaseFrom(context.Background()); ok {
		t.Fatal("LeaseFrom outside an execution reported a lease")
	}
}

func TestDoRecordsOutcomeAfterCallerCancelled(t *testing.T) {
	st := newStore(t)
	e := idem.New(st)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.Do(ctx, "k", fpA, func(ctx context.Context) (idem.Response, error) {
		cancel() // the client went away while the effect ran
		return idem.Response{Status: 200, Body: []byte("done")}, nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	rec, err := st.Get(context.Background(), "k")
	if err != nil || rec.Status != idem.StatusCompleted {
		t.Fatalf("record = %+v, %v; want completed despite the cancelled caller", rec, err)
	}
}

func TestCloseWaitsForHeartbeatGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	e := idem.New(newStore(t), idem.WithLeaseTTL(time.Hour))
	for i := range 10 {
		if _, err := e.Do(context.Background(), fmt.Sprint("k", i), fpA, ok("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// With an hour-long lease the scheduler ticks every 5 minutes: only
	// Close can have made it exit this soon.
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines after Close, %d before: the heartbeat goroutine is still running", after, before)
	}
	if _, err := e.Do(context.Background(), "after-close", fpA, ok("x")); err != nil {
		t.Fatalf("Do after Close: %v", err)
	}
	_ = e.Close()
}
