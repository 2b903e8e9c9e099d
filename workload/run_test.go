package workload_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustSink(t *testing.T, name string) workload.LedgerKeeper {
	t.Helper()
	s, err := workload.NewSink(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newStore(t *testing.T, clock idem.Clock) *memstore.Store {
	t.Helper()
	st := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { st.Close() })
	return st
}

// crashFaults crashes the first n executions that reach point.
type crashFaults struct {
	point   idem.Point
	left    atomic.Int64
	stopped atomic.Bool
}

func crashes(p idem.Point, n int) *crashFaults {
	c := &crashFaults{point: p}
	c.left.Store(int64(n))
	return c
}

func (c *crashFaults) Hook() idem.Hook {
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		if p == c.point && !c.stopped.Load() && c.left.Add(-1) >= 0 {
			return errors.New("test crash")
		}
		return nil
	}
}
func (c *crashFaults) Start()                         {}
func (c *crashFaults) ForcedFailure(idem.Lease) error { return nil }
func (c *crashFaults) Stop()                          { c.stopped.Store(true) }

func run(t *testing.T, cfg workload.Config) (*workload.Result, []history.Op) {
	t.Helper()
	res, err := workload.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ops := res.Recorder.Ops()
	h := &history.History{Ops: ops}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	return res, ops
}

func count(ops []history.Op, f func(*history.Op) bool) int {
	n := 0
	for i := range ops {
		if f(&ops[i]) {
			n++
		}
	}
	return n
}

// TestCrashAfterEffect is the theory of the safety matrix in miniature:
// a crash after the effect leads to a second effect unless the recovery
// hook asks the fenced sink.
func TestCrashAfterEffect(t *testing.T) {
	for _, c := range []struct {
		name     string
		recovery bool
		doubled  bool
	}{
		{"without recovery", false, true},
		{"with recovery", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, ops := run(t, workload.Config{
				Seed: 1, Duration: 300 * time.Millisecond, Clients: 4,
				Store: newStore(t, nil), Sink: mustSink(t, workload.SinkFenced),
				Engine: workload.EngineSettings{LeaseTTL: 50 * time.Millisecond, Recovery: c.recovery},
				Retry:  workload.Retry{MaxAttempts: 50, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
				Faults: crashes(idem.PointAfterFn, 3),
			})
			st := res.Ledger.Stats()
			if got := st.Doubled > 0; got != c.doubled {
				t.Fatalf("ledger %+v: doubled=%t, want %t", st, got, c.doubled)
			}
			if n := count(ops, func(op *history.Op) bool { return op.Outcome == history.Unknown && op.Kind == history.KindCall }); n != 3 {
				t.Fatalf("%d unknown calls, want the 3 crashed ones", n)
			}
		})
	}
}

// TestProbeOnManualClock: a holder crashes before its effect and the
// store's clock stands still, so retries see 409 until the probe advances
// the clock by one lease TTL; the probe then takes the key over.
func TestProbeOnManualClock(t *testing.T) {
	clock := memstore.NewManualClock(time.Unix(1_700_000_000, 0))
	res, ops := run(t, workload.Config{
		Seed: 2, Duration: 50 * time.Millisecond, Clients: 1,
		Store: newStore(t, clock), StoreClock: clock, Sink: mustSink(t, workload.SinkFenced),
		Engine: workload.EngineSettings{LeaseTTL: time.Hour},
		Retry:  workload.Retry{MaxAttempts: 3, Backoff: time.Millisecond},
		Faults: crashes(idem.PointBeforeFn, 1),
	})
	if res.Probed < 1 || res.Probed > 2 { // the crashed key, and the client's last key as a sample
		t.Fatalf("probed %d keys, want 1 or 2", res.Probed)
	}
	probes := count(ops, func(op *history.Op) bool { return op.Probe && op.Outcome == history.Executed })
	if probes != 1 {
		t.Fatalf("%d executed probes, want 1", probes)
	}
	if n := count(ops, func(op *history.Op) bool { return op.Outcome == history.InProgress }); n != 2 {
		t.Fatalf("%d in-progress retries, want 2", n)
	}
}

// TestEffectOutlivesClientTimeout: the client gives up on every call, the
// business function still applies its effect (it does not know).
func TestEffectOutlivesClientTimeout(t *testing.T) {
	res, ops := run(t, workload.Config{
		Seed: 3, Duration: 100 * time.Millisecond, Clients: 2,
		Store: newStore(t, nil), Sink: mustSink(t, workload.SinkPlain),
		Engine:   workload.EngineSettings{LeaseTTL: time.Second},
		Retry:    workload.Retry{Timeout: time.Millisecond},
		Business: workload.Business{Latency: workload.Latency{Dist: "fixed", Mean: 20 * time.Millisecond}},
		NoProbe:  true,
	})
	calls := count(ops, func(op *history.Op) bool { return op.Kind == history.KindCall })
	unknown := count(ops, func(op *history.Op) bool {
		return op.Kind == history.KindCall && op.Outcome == history.Unknown && op.Return == history.NoReturn
	})
	if calls == 0 || unknown != calls {
		t.Fatalf("%d of %d calls unknown, want all", unknown, calls)
	}
	if st := res.Ledger.Stats(); st.Applied != calls {
		t.Fatalf("%d effects applied for %d abandoned calls", st.Applied, calls)
	}
}

func TestBusinessFailures(t *testing.T) {
	for _, c := range []struct {
		name    string
		b       workload.Business
		outcome history.Outcome
	}{
		{"retryable", workload.Business{RetryableRate: 1}, history.Released},
		{"permanent", workload.Business{PermanentRate: 1}, history.Failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, ops := run(t, workload.Config{
				Seed: 4, Duration: 50 * time.Millisecond, Clients: 2,
				Store: newStore(t, nil), Sink: mustSink(t, workload.SinkFenced),
				Engine: workload.EngineSettings{LeaseTTL: 100 * time.Millisecond}, Business: c.b,
				NoProbe: true, // a probe would run the released keys without failing
			})
			calls := count(ops, func(op *history.Op) bool { return op.Kind == history.KindCall && !op.Probe })
			if n := count(ops, func(op *history.Op) bool { return op.Outcome == c.outcome && !op.Probe }); n != calls || calls == 0 {
				t.Fatalf("%d of %d calls %s", n, calls, c.outcome)
			}
			if st := res.Ledger.Stats(); st.Applied != 0 {
				t.Fatalf("failed executions applied %d effects", st.Applied)
			}
		})
	}
}

// TestOpenLoop: paced requests carry their intended send time, about
// Rate*Duration of them are sent, and latency is measured from it.
func TestOpenLoop(t *testing.T) {
	res, ops := run(t, workload.Config{
		Seed: 5, Duration: 300 * time.Millisecond, Clients: 4, Rate: 1000,
		Store: newStore(t, nil), Sink: mustSink(t, workload.SinkFenced),
		Engine: workload.EngineSettings{LeaseTTL: time.Second},
	})
	if !res.Open || res.Deliveries < 250 || res.Deliveries > 301 {
		t.Fatalf("open=%t deliveries %d, want about 300", res.Open, res.Deliveries)
	}
	for i := range ops {
		if op := &ops[i]; op.Kind == history.KindCall && !op.Probe && (op.Intended == 0 || op.Intended > op.Call+int64(time.Millisecond)) {
			t.Fatalf("call without a plausible intended time: %+v", op)
		}
	}
	if res.OpsPerSec() <= 0 || res.TrafficOps > len(ops) {
		t.Fatalf("driver throughput %g from %d ops", res.OpsPerSec(), res.TrafficOps)
	}
}

func TestDuplicatesAndMismatches(t *testing.T) {
	res, ops := run(t, workload.Config{
		Seed: 6, Duration: 200 * time.Millisecond, Clients: 8,
		Store: newStore(t, nil), Sink: mustSink(t, workload.SinkFenced),
		Engine:   workload.EngineSettings{LeaseTTL: time.Second},
		Keys:     workload.Keys{Dist: "zipf", Space: 50, Concurrent: 2, MismatchRate: 0.1},
		Retry:    workload.Retry{MaxAttempts: 20, Backoff: time.Millisecond},
		Business: workload.Business{Latency: workload.Latency{Dist: "uniform", Min: 100 * time.Microsecond, Max: time.Millisecond}},
	})
	if st := res.Ledger.Stats(); st.Doubled != 0 || st.Keys > 50 {
		t.Fatalf("ledger %+v", st)
	}
	for _, o := range []history.Outcome{history.Executed, history.Replayed, history.Mismatch} {
		if count(ops, func(op *history.Op) bool { return op.Outcome == o }) == 0 {
			t.Errorf("no %s call", o)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	_, err := workload.Run(context.Background(), workload.Config{Duration: time.Second})
	if !errors.Is(err, workload.ErrConfig) {
		t.Fatalf("no store: %v", err)
	}
	_, err = workload.Run(context.Background(), workload.Config{
		Duration: time.Second, Store: newStore(t, nil), Sink: mustSink(t, workload.SinkPlain),
		Engine: workload.EngineSettings{Recovery: true},
	})
	if !errors.Is(err, workload.ErrConfig) {
		t.Fatalf("recovery on plain sink: %v", err)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := workload.Run(ctx, workload.Config{
		Duration: time.Hour, Store: newStore(t, nil), Sink: mustSink(t, workload.SinkPlain),
	})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

// deadConnStore fails the first Acquire of every key with a backend error
// once armed, as a pooled connection to a restarted server fails its next
// call, once.
//
// With seen nil it fails instead the next dead Acquires once armed,
// whatever their keys, as a pool holding that many connections to a
// server restarted at the end of the traffic does.
type deadConnStore struct {
	idem.Store
	armed atomic.Bool
	mu    sync.Mutex
	seen  map[string]bool
	dead  int
}

func (s *deadConnStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	if s.armed.Load() {
		s.mu.Lock()
		fail := false
		if s.seen != nil {
			fail = !s.seen[key]
			s.seen[key] = true
		} else if s.dead > 0 {
			fail = true
			s.dead--
		}
		s.mu.Unlock()
		if fail {
			return nil, nil, idem.MarkAmbiguous(idem.BackendError("acquire", errors.New("unexpected EOF")))
		}
	}
	return s.Store.Acquire(ctx, key, fp, ttl)
}

// armAtStop crashes executions like crashFaults and arms the store when the
// run stops its faults, just before the liveness probe.
type armAtStop struct {
	*crashFaults
	st *deadConnStore
}

func (a armAtStop) Stop() { a.crashFaults.Stop(); a.st.armed.Store(true) }

// TestProbeOutlastsAPoolOfDeadConnections: a pool of 40 connections that
// all died with a server restarted at the end of the traffic answers the
// next 40 calls with backend errors, more than a few retries per key of a
// short probe; the probe calls again while its time lasts, so no key is
// reported stuck.
func TestProbeOutlastsAPoolOfDeadConnections(t *testing.T) {
	st := &deadConnStore{Store: newStore(t, nil), dead: 40}
	res, ops := run(t, workload.Config{
		Seed: 3, Duration: 200 * time.Millisecond, Clients: 4,
		Engine: workload.EngineSettings{LeaseTTL: 50 * time.Millisecond, Recovery: true},
		Store:  st, Sink: mustSink(t, workload.SinkFenced),
		Faults: armAtStop{crashes(idem.PointAfterFn, 5), st},
	})
	if res.Probed == 0 || res.Probed*3 >= 40 {
		t.Fatalf("%d keys probed: the test needs fewer than 14", res.Probed)
	}
	rep := checker.Check(&history.History{Ops: ops}, checker.Options{})
	if rep.Verdict != checker.VerdictOK {
		t.Fatalf("verdict %s: %+v", rep.Verdict, rep.Violations)
	}
}

// TestProbeCallsAgainAfterABackendError: a probe call that a dead
// connection answered with a backend error is made again; only the last
// call of a key is its liveness probe, so the keys are not reported stuck.
func TestProbeCallsAgainAfterABackendError(t *testing.T) {
	st := &deadConnStore{Store: newStore(t, nil), seen: map[string]bool{}}
	res, ops := run(t, workload.Config{
		Seed: 3, Duration: 200 * time.Millisecond, Clients: 4,
		Engine: workload.EngineSettings{LeaseTTL: 50 * time.Millisecond, Recovery: true},
		Store:  st, Sink: mustSink(t, workload.SinkFenced),
		Faults: armAtStop{crashes(idem.PointAfterFn, 5), st},
	})
	if res.Probed == 0 {
		t.Fatal("nothing probed")
	}
	again := count(ops, func(op *history.Op) bool {
		return op.Kind == history.KindCall && !op.Probe && op.Client > 4 && op.Outcome == history.Unknown
	})
	if again == 0 {
		t.Fatal("no probe call was answered by the dead connection")
	}
	rep := checker.Check(&history.History{Ops: ops}, checker.Options{})
	if rep.Verdict != checker.VerdictOK {
		t.Fatalf("verdict %s: %+v", rep.Verdict, rep.Violations)
	}
}
