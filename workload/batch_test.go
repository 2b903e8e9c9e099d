package workload_test

import (
	"testing"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// batchConfig is a consumer run: batches of 16 with a copy of a third of
// the requests delivered at once (often into the same batch) and one more
// a little later, crashes after the effect, recovery from the ledger.
func batchConfig(st idem.Store, sink workload.Sink) workload.Config {
	return workload.Config{
		Seed:     7,
		Duration: 400 * time.Millisecond,
		Clients:  4,
		Batch:    16,
		Keys:     workload.Keys{Concurrent: 1, Delayed: 1, Delay: 2 * time.Millisecond, DupFraction: 0.3},
		Retry:    workload.Retry{MaxAttempts: 10, Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond},
		Engine:   workload.EngineSettings{LeaseTTL: 200 * time.Millisecond, Recovery: true},
		Store:    st,
		Sink:     sink,
		Faults:   crashes(idem.PointAfterFn, 5),
	}
}

// TestBatchConsumer: a batch run sends each pull with one DoBatch; keys
// come twice in one batch; every call and lease step is recorded; the
// correct engine passes the checker and crashed executions are recovered.
func TestBatchConsumer(t *testing.T) {
	res, ops := run(t, batchConfig(newStore(t, nil), mustSink(t, workload.SinkFenced)))
	rep := checker.Check(&history.History{Ops: ops}, checker.Options{})
	if rep.Verdict != checker.VerdictOK || rep.Result(checker.I7TokenOrder).Checked == 0 {
		t.Fatalf("correct engine in batches: verdict %s, I7 %+v, violations %+v", rep.Verdict, rep.Result(checker.I7TokenOrder), rep.Violations)
	}
	if st := res.Ledger.Stats(); st.Doubled != 0 || st.Applied == 0 {
		t.Fatalf("ledger %+v", st)
	}
	// Calls of one batch share their call and return times; a key twice
	// in one batch shows as two calls of one client with equal spans.
	type batch struct {
		client    int
		call, ret int64
	}
	type item struct {
		batch
		key string
	}
	items, batches := map[item]int{}, map[batch]int{}
	for _, op := range ops {
		if op.Kind != history.KindCall || op.Return == history.NoReturn {
			continue
		}
		b := batch{op.Client, op.Call, op.Return}
		items[item{b, op.Key}]++
		batches[b]++
	}
	if !anyAbove1(items) {
		t.Error("no key came twice in one batch")
	}
	if !anyAbove1(batches) {
		t.Error("no batch held more than one call")
	}
	leases := count(ops, func(op *history.Op) bool { return op.Kind == history.KindLease })
	acquired := count(ops, func(op *history.Op) bool {
		return op.Kind == history.KindLease && op.Transition == history.Transition(idem.TransitionAcquired.String())
	})
	if leases == 0 || acquired == 0 {
		t.Fatalf("lease steps recorded: %d (acquired %d); want the batch's claims", leases, acquired)
	}
	for _, op := range ops {
		if op.Kind == history.KindLease && op.Exec == "" {
			t.Fatalf("lease step without its execution: %+v", op)
		}
	}
	if res.Deliveries == 0 {
		t.Fatal("no deliveries")
	}
}

// TestBatchConsumerCatchesNaiveDesign: the same run on a check-then-act
// store (claim by read, then write) is caught.
func TestBatchConsumerCatchesNaiveDesign(t *testing.T) {
	cfg := batchConfig(naive.NewCheckThenAct(naive.Options{}), mustSink(t, workload.SinkFenced))
	cfg.Engine.Recovery = false
	cfg.Faults = nil
	cfg.Clients = 8
	res, ops := run(t, cfg)
	rep := checker.Check(&history.History{Ops: ops}, checker.Options{})
	if rep.Verdict != checker.VerdictViolation || res.Ledger.Stats().Doubled == 0 {
		t.Fatalf("check-then-act in batches: verdict %s, ledger %+v; want a double execution caught", rep.Verdict, res.Ledger.Stats())
	}
}

func anyAbove1[K comparable](m map[K]int) bool {
	for _, n := range m {
		if n > 1 {
			return true
		}
	}
	return false
}
