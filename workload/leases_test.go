package workload_test

import (
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// TestTransitionNamesMatch: every transition the engine's observer reports
// has a valid history name, so no lease op is ever refused by Validate.
func TestTransitionNamesMatch(t *testing.T) {
	for _, tr := range idem.Transitions() {
		if !history.Transition(tr.String()).Valid() {
			t.Errorf("engine transition %q is not a history.Transition", tr)
		}
	}
}

// TestLeaseStepsRecorded runs crashes after the function with recovery and
// heartbeats, and checks that the lease steps are in the history: every
// execution that completed has its grant and its completion, with the
// call's token, client and execution id, inside the call's time span;
// crashed holders' keys were taken over with their token as PrevToken;
// renewals were recorded; and the checker (I7 and I8 included) passes.
func TestLeaseStepsRecorded(t *testing.T) {
	_, ops := run(t, workload.Config{
		Seed: 7, Duration: 400 * time.Millisecond, Clients: 4,
		Store: newStore(t, nil), Sink: mustSink(t, workload.SinkFenced),
		Engine:   workload.EngineSettings{LeaseTTL: 60 * time.Millisecond, Recovery: true},
		Retry:    workload.Retry{MaxAttempts: 50, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		Business: workload.Business{Latency: workload.Latency{Dist: "uniform", Min: 0, Max: 50 * time.Millisecond}},
		Faults:   crashes(idem.PointAfterFn, 3),
	})
	type step struct {
		exec string
		tr   history.Transition
	}
	leases := map[step]*history.Op{}
	grantOf := map[uint64]*history.Op{}
	for i := range ops {
		if op := &ops[i]; op.Kind == history.KindLease {
			leases[step{op.Exec, op.Transition}] = op
			if op.Transition.Grant() {
				grantOf[op.Token] = op
			}
		}
	}
	executed := 0
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.KindCall || op.Outcome != history.Executed || op.Exec == "" {
			continue
		}
		g := grantOf[op.Token]
		if g == nil {
			t.Fatalf("executed call %+v has no grant", op)
		}
		if g.Client != op.Client || g.Key != op.Key || g.Call < op.Call || g.Return > op.Return || g.Call > g.Return {
			t.Errorf("grant %+v does not belong to or lie inside call %+v", g, op)
		}
		c := leases[step{g.Exec, history.TransitionCompleted}]
		if c == nil || c.Token != op.Token || c.Call < g.Return || c.Return > op.Return {
			t.Errorf("completion %+v does not follow grant %+v inside call %+v", c, g, op)
		}
		executed++
	}
	takeOvers, beats := 0, 0
	for _, op := range leases {
		switch op.Transition {
		case history.TransitionTakenOver:
			takeOvers++
			if prev := grantOf[op.PrevToken]; prev == nil || prev.Key != op.Key || prev.Return > op.Call {
				t.Errorf("take-over %+v names no earlier grant of its key as previous", op)
			}
		case history.TransitionHeartbeat:
			beats++
		}
	}
	if executed == 0 || takeOvers < 3 || beats == 0 {
		t.Fatalf("%d executions, %d take-overs (want >= 3 crashed holders), %d heartbeats", executed, takeOvers, beats)
	}
	rep := checker.Check(&history.History{Ops: ops}, checker.Options{})
	if rep.Verdict != checker.VerdictOK || rep.Stats.Leases == 0 || rep.Result(checker.I7TokenOrder).Checked == 0 {
		t.Fatalf("verdict %s, %d lease ops, I7 %+v, violations %+v", rep.Verdict, rep.Stats.Leases, rep.Result(checker.I7TokenOrder), rep.Violations)
	}
}
