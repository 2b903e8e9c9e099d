package workload

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// ClockView is implemented by a store whose client judges leases by the
// clock of the app server it runs in (a client library over a plain
// key-value store): WithClock returns the store as an app server with that
// clock sees it, over the same records. With EngineSettings.ClockSkew each
// app server of a run gets the view of its own clock; a store without it
// judges by its server's one clock, whatever the app servers' clocks say.
type ClockView interface {
	WithClock(clock idem.Clock) idem.Store
}

// maxAppServers bounds the app servers of a run with clock skew: clients
// share them round robin.
const maxAppServers = 16

// skewClock is an app server's clock: the wall clock plus its offset.
type skewClock struct{ offset time.Duration }

func (c skewClock) Now() time.Time { return time.Now().Add(c.offset) }

// skewedEngines builds the app servers of a run with clock skew: each an
// engine on its own clock, offset from the wall clock by an amount drawn
// from the seed in [-ClockSkew, +ClockSkew], over the store's view of that
// clock (ClockView) or the shared store. Each offset is recorded as a
// clock-skew fault of the app server (Worker).
func (d *driver) skewedEngines() []*idem.Engine {
	skew := d.cfg.Engine.ClockSkew
	rng := rand.New(rand.NewPCG(uint64(d.cfg.Seed), 0xc10c))
	n := min(max(d.cfg.Clients, 1), maxAppServers)
	engs := make([]*idem.Engine, n)
	for i := range engs {
		clock := skewClock{offset: time.Duration(rng.Int64N(int64(2*skew)+1)) - skew}
		st := d.cfg.Store
		if v, ok := st.(ClockView); ok {
			st = v.WithClock(clock)
		}
		engs[i] = idem.New(st, append(d.engineOptions(), idem.WithClock(clock))...)
		op := history.Fault(history.FaultClockSkew, "app server "+strconv.Itoa(i)+" clock "+offsetString(clock.offset), d.now(), history.NoReturn)
		op.Worker = i
		d.rec.Record(op)
	}
	return engs
}

func offsetString(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// engineOf returns the engine of the app server that serves client.
func (d *driver) engineOf(client int) *idem.Engine {
	if len(d.apps) == 0 {
		return d.eng
	}
	return d.apps[client%len(d.apps)]
}
