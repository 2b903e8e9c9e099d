package workload_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// viewStore is a memory store that hands out clock views (workload.ClockView)
// and remembers the clocks it was given; every view is the shared store.
type viewStore struct {
	idem.Store
	mu     sync.Mutex
	clocks []idem.Clock
}

func (v *viewStore) WithClock(c idem.Clock) idem.Store {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clocks = append(v.clocks, c)
	return v.Store
}

// TestClockSkew: with Engine.ClockSkew every app server (up to 16, here
// one per client) gets a view of the store on its own clock, off the wall
// clock by at most the skew, records its offset as a clock-skew fault, and
// the calls go through them; without it, no view is asked for.
func TestClockSkew(t *testing.T) {
	const skew = 500 * time.Millisecond
	st := &viewStore{Store: newStore(t, nil)}
	_, ops := run(t, workload.Config{
		Seed: 3, Duration: 100 * time.Millisecond, Clients: 4,
		Store: st, Sink: mustSink(t, workload.SinkFenced),
		Engine:   workload.EngineSettings{LeaseTTL: time.Second, ClockSkew: skew},
		Keys:     workload.Keys{Dist: "unique"},
		Retry:    workload.Retry{MaxAttempts: 5, Backoff: time.Millisecond},
		Business: workload.Business{Latency: workload.Latency{Dist: "fixed", Mean: time.Millisecond}},
	})
	if len(st.clocks) != 4 {
		t.Fatalf("%d clock views asked for, want one per app server (4)", len(st.clocks))
	}
	distinct := map[time.Duration]bool{}
	for _, c := range st.clocks {
		off := time.Until(c.Now())
		if off < -skew-50*time.Millisecond || off > skew+50*time.Millisecond {
			t.Errorf("an app server's clock is off by %s, want within ±%s", off, skew)
		}
		distinct[off.Round(10*time.Millisecond)] = true
	}
	if len(distinct) < 2 {
		t.Errorf("every app server's clock is off by the same amount: %v", distinct)
	}
	faults := count(ops, func(op *history.Op) bool {
		return op.Kind == history.KindFault && op.Fault == history.FaultClockSkew && strings.Contains(op.Label, "clock")
	})
	if faults != 4 {
		t.Errorf("%d clock-skew faults recorded, want 4", faults)
	}
	if count(ops, func(op *history.Op) bool { return op.Outcome == history.Executed }) == 0 {
		t.Error("no call executed through the app servers")
	}

	plain := &viewStore{Store: newStore(t, nil)}
	run(t, workload.Config{
		Seed: 3, Duration: 50 * time.Millisecond, Clients: 2,
		Store: plain, Sink: mustSink(t, workload.SinkFenced),
		Engine: workload.EngineSettings{LeaseTTL: time.Second},
		Keys:   workload.Keys{Dist: "unique"},
	})
	if len(plain.clocks) != 0 {
		t.Errorf("without ClockSkew, %d clock views asked for", len(plain.clocks))
	}
	if _, err := workload.Run(context.Background(), workload.Config{Duration: time.Second, Store: plain,
		Sink: mustSink(t, workload.SinkFenced), Engine: workload.EngineSettings{ClockSkew: -time.Second}}); err == nil {
		t.Error("a negative clock skew was accepted")
	}
}

// TestResponsesCarryStatusAndHeaders: an execution answers 201 Created
// with Location, ETag and Content-Type, and a replay gives all of it back.
func TestResponsesCarryStatusAndHeaders(t *testing.T) {
	st := newStore(t, nil)
	_, ops := run(t, workload.Config{
		Seed: 5, Duration: 100 * time.Millisecond, Clients: 4,
		Store: st, Sink: mustSink(t, workload.SinkFenced),
		Engine: workload.EngineSettings{LeaseTTL: time.Second},
		Keys:   workload.Keys{Dist: "zipf", Space: 10},
	})
	var key string
	for _, op := range ops {
		if op.Outcome == history.Replayed {
			key = op.Key
			break
		}
	}
	if key == "" {
		t.Fatal("no replay in the run")
	}
	rec, err := st.Get(context.Background(), key)
	if err != nil || rec.Response == nil {
		t.Fatalf("Get(%q) = %+v, %v", key, rec, err)
	}
	r := rec.Response
	if r.Status != 201 || r.Header["Location"] == nil || r.Header["Etag"] == nil || r.Header["Content-Type"] == nil {
		t.Fatalf("stored response %d %v, want 201 with Location, ETag and Content-Type", r.Status, r.Header)
	}
	if want := "/payments/" + key; r.Header["Location"][0] != want {
		t.Errorf("Location %q, want %q", r.Header["Location"][0], want)
	}
	// Every replay gives back, status and headers included, the response
	// of an execution of its key (I3 holds).
	executed := map[string]bool{}
	for _, op := range ops {
		if op.Outcome == history.Executed {
			executed[op.Key+" "+op.Resp] = true
		}
	}
	for _, op := range ops {
		if op.Outcome == history.Replayed && !executed[op.Key+" "+op.Resp] {
			t.Errorf("a replay of %s returned a response no execution of the key gave", op.Key)
		}
	}
}
