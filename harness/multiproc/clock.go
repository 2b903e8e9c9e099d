package multiproc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/idembench/idembench/history"
)

// MethodClock, a call from a worker (a ClockSample): the coordinator
// answers with its clock's reading. As an event (a ClockReport): the
// offset the worker measured and now adds to its readings, and the error
// bound left.
const MethodClock = "clock"

// MethodStart, a call from a worker (a StartRequest) once it is ready:
// the coordinator answers when every worker is ready, the start barrier
// of the run's traffic.
const MethodStart = "start"

// MethodStop, an event from the coordinator to a remote worker: end the
// traffic and send what you have (a local worker gets SIGTERM instead).
const MethodStop = "stop"

// StartRequest is the body of a MethodStart call.
type StartRequest struct{}

// ClockSample is the coordinator's answer to a MethodClock call: Now is
// its history.Now at the time it answered.
type ClockSample struct{ Now int64 }

// ClockReport is a worker's MethodClock event.
type ClockReport struct {
	Offset, Bound time.Duration
}

// clockSamples is how many round trips a worker makes to measure its
// offset; the tightest one wins.
const clockSamples = 8

// clockReadError bounds the error of one clock reading on either side
// (history.Now's calibration is well under a microsecond).
const clockReadError = 2 * time.Microsecond

// measureClock measures local's offset to the coordinator's clock over c,
// NTP-style: for each round trip from t0 to t1 (local) the coordinator
// read its clock at some time inside it, so the offset is its reading
// minus the midpoint, to within half the round trip. It keeps the sample
// with the shortest round trip.
func measureClock(ctx context.Context, c *Conn, local func() int64) (ClockReport, error) {
	var rep ClockReport
	best := int64(-1)
	for range clockSamples {
		t0 := local()
		r, err := c.Call(ctx, MethodClock, ClockSample{})
		t1 := local()
		if err != nil {
			return rep, fmt.Errorf("measure the clock offset: %w", err)
		}
		s, ok := r.(ClockSample)
		if !ok {
			return rep, fmt.Errorf("measure the clock offset: the coordinator answered a %T", r)
		}
		if rtt := t1 - t0; best < 0 || rtt < best {
			best = rtt
			rep.Offset = time.Duration(s.Now - (t0+t1)/2)
		}
	}
	rep.Bound = time.Duration(best/2) + 2*clockReadError
	return rep, nil
}

// noteClock records the clock report of worker i's incarnation whose
// clients start at base: it covers the incarnation's client ids, the
// probe's included.
func (co *coordinator) noteClock(i int, ws *workerSpec, r ClockReport) {
	co.clocks = append(co.clocks, history.ClockBound{Worker: i, ClientLo: ws.ClientBase,
		ClientHi: ws.ClientBase + ws.Over.Clients + probeClients, Offset: r.Offset, Bound: r.Bound})
}

// clockBounds returns the clock bounds the workers reported, by client.
func (co *coordinator) clockBounds() []history.ClockBound {
	co.mu.Lock()
	defer co.mu.Unlock()
	cs := slices.Clone(co.clocks)
	slices.SortFunc(cs, func(a, b history.ClockBound) int { return a.ClientLo - b.ClientLo })
	return cs
}
