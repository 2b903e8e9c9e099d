package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// brokenStore fails Acquire or Complete with a backend error.
type brokenStore struct {
	idem.Store
	acquire, complete bool
}

var errDown = errors.New("down")

func (s *brokenStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	if s.acquire {
		return nil, nil, idem.BackendError("acquire", errDown)
	}
	return s.Store.Acquire(ctx, key, fp, ttl)
}

func (s *brokenStore) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	if s.complete {
		return idem.BackendError("complete", errDown)
	}
	return s.Store.Complete(ctx, l, resp, retention)
}

// listError is an error type that cannot be compared with ==.
type listError struct{ reasons []string }

func (e listError) Error() string { return "invalid: " + e.reasons[0] }

func TestConsume(t *testing.T) {
	errBusy := errors.New("downstream busy")
	errBad := idem.Permanent(errors.New("malformed message"))
	errList := idem.Permanent(listError{[]string{"no amount"}})
	fp := idem.FingerprintString("body")
	type delivery struct {
		key      string
		fp       idem.Fingerprint
		fnErr    error
		decision idem.Decision
		err      error // errors.Is target; nil means no error
		runs     int   // fn runs after this delivery
	}
	tests := []struct {
		name       string
		store      func(idem.Store) idem.Store
		deliveries []delivery
	}{
		{name: "processed once, duplicates acked", deliveries: []delivery{
			{"m", fp, nil, idem.Ack, nil, 1},
			{"m", fp, nil, idem.Ack, nil, 1},
			{"m", fp, nil, idem.Ack, nil, 1},
		}},
		{name: "permanent failure dead-lettered once and stored", deliveries: []delivery{
			{"m", fp, errBad, idem.DeadLetter, errBad, 1},
			{"m", fp, nil, idem.Ack, nil, 1},
		}},
		{name: "permanent failure with an incomparable error type", deliveries: []delivery{
			{"m", fp, errList, idem.DeadLetter, errList, 1},
			{"m", fp, nil, idem.Ack, nil, 1},
		}},
		{name: "retryable failure nacked and released", deliveries: []delivery{
			{"m", fp, errBusy, idem.Redeliver, errBusy, 1},
			{"m", fp, errBusy, idem.Redeliver, errBusy, 2},
			{"m", fp, nil, idem.Ack, nil, 3},
			{"m", fp, nil, idem.Ack, nil, 3},
		}},
		{name: "invalid key rejected", deliveries: []delivery{
			{"bad key", fp, nil, idem.DeadLetter, idem.ErrInvalidKey, 0},
		}},
		{name: "key reused by another message rejected", deliveries: []delivery{
			{"m", fp, nil, idem.Ack, nil, 1},
			{"m", idem.FingerprintString("other body"), nil, idem.DeadLetter, idem.ErrFingerprintMismatch, 1},
		}},
		{name: "store down nacked", store: func(s idem.Store) idem.Store { return &brokenStore{Store: s, acquire: true} }, deliveries: []delivery{
			{"m", fp, nil, idem.Redeliver, idem.ErrBackend, 0},
		}},
		{name: "completion not recorded nacked", store: func(s idem.Store) idem.Store { return &brokenStore{Store: s, complete: true} }, deliveries: []delivery{
			{"m", fp, nil, idem.Redeliver, idem.ErrBackend, 1},
			{"m", fp, nil, idem.RedeliverLater, idem.ErrInProgress, 1}, // the lease is still live
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := consumeEngine(t, tt.store)
			runs := 0
			for i, d := range tt.deliveries {
				got, err := eng.Consume(context.Background(), d.key, d.fp, func(context.Context) error {
					runs++
					return d.fnErr
				})
				if got != d.decision || runs != d.runs {
					t.Fatalf("delivery %d: %s after %d runs, want %s after %d (err %v)", i, got, runs, d.decision, d.runs, err)
				}
				if d.err == nil && err != nil || d.err != nil && !errors.Is(err, d.err) {
					t.Fatalf("delivery %d: error %v, want %v", i, err, d.err)
				}
			}
		})
		// The same deliveries as one pulled batch get the same decisions.
		t.Run(tt.name+"/batch", func(t *testing.T) {
			eng := consumeEngine(t, tt.store)
			runs := 0
			var msgs []idem.Message
			for _, d := range tt.deliveries {
				msgs = append(msgs, idem.Message{Key: d.key, Fingerprint: d.fp, Fn: func(context.Context) error {
					runs++
					return d.fnErr
				}})
			}
			for i, got := range eng.ConsumeBatch(context.Background(), msgs) {
				d := tt.deliveries[i]
				if got.Decision != d.decision || d.err == nil && got.Err != nil || d.err != nil && !errors.Is(got.Err, d.err) {
					t.Fatalf("message %d: %s (%v), want %s (%v)", i, got.Decision, got.Err, d.decision, d.err)
				}
			}
			if want := tt.deliveries[len(tt.deliveries)-1].runs; runs != want {
				t.Fatalf("handlers ran %d times, want %d", runs, want)
			}
		})
	}
}

func TestConsumeInFlightIsRequeued(t *testing.T) {
	mem := memstore.New(memstore.Options{SweepInterval: -1})
	defer mem.Close()
	eng := idem.New(mem)
	fp := idem.FingerprintString("body")
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan idem.Decision)
	go func() {
		d, _ := eng.Consume(context.Background(), "m", fp, func(context.Context) error {
			close(entered)
			<-release
			return nil
		})
		done <- d
	}()
	<-entered
	d, err := eng.Consume(context.Background(), "m", fp, func(context.Context) error {
		t.Error("duplicate ran while the first is in flight")
		return nil
	})
	if d != idem.RedeliverLater || !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("in flight: %s, %v; want requeue, ErrInProgress", d, err)
	}
	close(release)
	if d := <-done; d != idem.Ack {
		t.Fatalf("first: %s", d)
	}
	if d, err := eng.Consume(context.Background(), "m", fp, nil); d != idem.Ack || err != nil {
		t.Fatalf("after completion: %s, %v", d, err)
	}
}

func TestConsumePanicReleases(t *testing.T) {
	mem := memstore.New(memstore.Options{SweepInterval: -1})
	defer mem.Close()
	eng := idem.New(mem)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		eng.Consume(context.Background(), "m", idem.Fingerprint{}, func(context.Context) error { panic("boom") })
	}()
	if _, err := mem.Get(context.Background(), "m"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("key after panic: %v", err)
	}
}

func TestDecisionString(t *testing.T) {
	for d, want := range map[idem.Decision]string{idem.Ack: "ack", idem.Redeliver: "redeliver", idem.RedeliverLater: "redeliver-later", idem.DeadLetter: "dead-letter", 0: "decision(0)"} {
		if got := d.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(d), got, want)
		}
	}
}

// TestConsumeAmbiguousRecordsUncertain: a handler that cannot tell whether
// its effect happened gets its message dead-lettered and the key recorded
// uncertain, so a redelivery, even after the lease, is not run again.
func TestConsumeAmbiguousRecordsUncertain(t *testing.T) {
	mem := memstore.New(memstore.Options{SweepInterval: -1})
	defer mem.Close()
	eng := idem.New(mem, idem.WithLeaseTTL(time.Millisecond))
	fp := idem.FingerprintString("body")
	lost := errors.New("broker ack lost")
	d, err := eng.Consume(context.Background(), "m", fp, func(context.Context) error { return idem.MarkAmbiguous(lost) })
	if d != idem.DeadLetter || !errors.Is(err, lost) || !errors.Is(err, idem.ErrUncertain) {
		t.Fatalf("ambiguous handler: %s, %v; want dead-letter with ErrUncertain and the handler's error", d, err)
	}
	time.Sleep(5 * time.Millisecond) // past the lease: an in-progress key would be taken over
	d, err = eng.Consume(context.Background(), "m", fp, func(context.Context) error {
		t.Error("redelivery of an uncertain message ran")
		return nil
	})
	if d != idem.DeadLetter || !errors.Is(err, idem.ErrUncertain) {
		t.Fatalf("redelivery: %s, %v; want dead-letter, ErrUncertain", d, err)
	}
}

// TestConsumeAmbiguousKeepsKeyWithRecovery: with a recovery hook the key of
// an ambiguous attempt stays in progress, so a redelivery within the lease
// is requeued rather than run again, and the hook decides after it.
func TestConsumeAmbiguousKeepsKeyWithRecovery(t *testing.T) {
	mem := memstore.New(memstore.Options{SweepInterval: -1})
	defer mem.Close()
	eng := idem.New(mem, idem.WithRecovery(func(context.Context, idem.Lease) (idem.Response, bool, error) {
		return idem.Response{}, false, nil
	}))
	fp := idem.FingerprintString("body")
	lost := errors.New("broker ack lost")
	d, err := eng.Consume(context.Background(), "m", fp, func(context.Context) error { return idem.MarkAmbiguous(lost) })
	if d != idem.Redeliver || !errors.Is(err, lost) {
		t.Fatalf("ambiguous handler: %s, %v; want redeliver with the handler's error", d, err)
	}
	d, err = eng.Consume(context.Background(), "m", fp, func(context.Context) error {
		t.Error("redelivery ran within the lease of an ambiguous attempt")
		return nil
	})
	if d != idem.RedeliverLater || !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("redelivery: %s, %v; want requeue, ErrInProgress", d, err)
	}
}

// consumeEngine returns an engine on a memory store, wrapped by wrap when
// set, closed at the end of t.
func consumeEngine(t *testing.T, wrap func(idem.Store) idem.Store) *idem.Engine {
	mem := memstore.New(memstore.Options{SweepInterval: -1})
	t.Cleanup(func() { mem.Close() })
	var store idem.Store = mem
	if wrap != nil {
		store = wrap(mem)
	}
	return idem.New(store)
}
