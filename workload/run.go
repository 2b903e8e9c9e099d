package workload

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Result is what a run produced besides its recorded operations.
type Result struct {
	// Recorder holds every recorded operation (calls, effects, probes);
	// fault windows are the injector's to add.
	Recorder *history.Recorder
	// Ledger is the sink's ledger after the run when the sink is a
	// LedgerKeeper; empty otherwise (the caller reads a LedgerReader's).
	Ledger *Ledger
	// Start is the wall-clock start of the run.
	Start time.Time
	// TrafficStart and TrafficEnd bound the traffic phase on the run's
	// timeline; DrainEnd is when the last call of the traffic returned.
	TrafficStart, TrafficEnd, DrainEnd int64
	// TrafficOps is the number of calls and effects recorded up to DrainEnd
	// (lease ops are not counted).
	TrafficOps int
	// Deliveries counts deliveries of logical requests (copies included).
	Deliveries int64
	// LateSends counts open-loop sends that started more than LateAfter
	// behind their intended time.
	LateSends int64
	// Probed is the number of keys the liveness probe called.
	Probed int
	// Open reports an open-loop run.
	Open bool
	// Recovery reports whether the engine's recovery hook was installed.
	Recovery bool
}

// driver is the state of one run.
type driver struct {
	cfg    Config
	target Target       // what an attempt does: cfg.Target, or engineTarget
	eng    *idem.Engine // the engine target's engine; nil with cfg.Target
	// apps are the app servers' engines of a run with clock skew, each on
	// its own clock (skew.go); nil without.
	apps   []*idem.Engine
	cs     *completers // the engine target's completers
	rec    *history.Recorder
	now    func() int64
	box    mailbox
	faults Faults
	tx     TxSink // nil unless the sink is transactional
	// runDone is Run's ctx.Done(): waits that model work end with it.
	runDone <-chan struct{}
	txOpts  TxEngine

	stopped    atomic.Bool  // traffic is over
	drainUntil atomic.Int64 // unix nanos after which no retry is scheduled
	inflight   sync.WaitGroup
	deliveries atomic.Int64
	late       atomic.Int64

	mu      sync.Mutex
	pending map[string]int64 // keys for the liveness probe, with their numbers
}

// Run drives one run (traffic, drain, liveness probe; see the package doc)
// and returns its Result. It returns early with ctx's error when ctx ends,
// after every goroutine it started has finished. A configuration error
// wraps ErrConfig.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &driver{cfg: cfg, rec: cfg.Recorder, now: cfg.Now, faults: cfg.Faults, pending: make(map[string]int64), runDone: ctx.Done()}
	if d.rec == nil {
		d.rec = history.NewRecorder()
	}
	ledger := NewLedger() // a sink whose ledger is read back after the run
	if d.target = cfg.Target; d.target == nil {
		d.target = engineTarget{d}
		d.eng = idem.New(cfg.Store, d.engineOptions()...)
		if tx, ok := cfg.Sink.(TxSink); ok {
			d.tx = tx
			d.txOpts = TxEngine{LeaseTTL: cfg.Engine.LeaseTTL, Heartbeat: cfg.Engine.Heartbeat, Retention: cfg.Engine.Retention}
			if d.faults != nil {
				d.txOpts.Hook = d.faults.Hook()
			}
		}
		defer d.eng.Close() // every Do has returned by then: wait for the heartbeat goroutine
		if cfg.Engine.ClockSkew > 0 && d.tx == nil {
			d.apps = d.skewedEngines()
			defer func() {
				for _, e := range d.apps {
					e.Close()
				}
			}()
		}
		if lk, ok := cfg.Sink.(LedgerKeeper); ok {
			ledger = lk.Ledger()
		}
	}
	res := &Result{Recorder: d.rec, Ledger: ledger, Start: time.Now(), Open: cfg.Rate > 0, Recovery: cfg.Engine.Recovery}

	if d.faults != nil {
		d.faults.Start()
	}
	if d.eng != nil {
		d.cs = d.startCompleters(ctx)
		defer d.cs.stop()
	}
	res.TrafficStart = d.now()
	if cfg.Duration > 0 {
		timer := time.AfterFunc(cfg.Duration, d.stopTraffic)
		defer timer.Stop()
	}
	if res.Open {
		d.openLoop(ctx, res.TrafficStart)
	} else {
		d.closedLoop(ctx)
	}
	d.stopTraffic()
	res.TrafficEnd = d.now()
	if cfg.Duration > 0 {
		res.TrafficEnd = min(res.TrafficEnd, res.TrafficStart+int64(cfg.Duration))
	}
	d.inflight.Wait() // calls abandoned by a client timeout
	res.DrainEnd = d.now()
	res.TrafficOps = d.rec.Len() - d.rec.LenKind(history.KindLease)
	if d.faults != nil {
		d.faults.Stop()
	}
	res.Deliveries = d.deliveries.Load()
	res.LateSends = d.late.Load()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if !cfg.NoProbe {
		keys := d.probeKeys()
		res.Probed = len(keys)
		if len(keys) > 0 {
			if err := d.target.Probe(ctx, keys); err != nil {
				return res, err
			}
		}
	}
	return res, ctx.Err()
}

// OpsPerSec is the driver's throughput: operations recorded during the
// traffic phase and its drain (calls and effects, probes excluded) per
// second of that span. Zero when the span is empty.
func (r *Result) OpsPerSec() float64 {
	span := time.Duration(r.DrainEnd - r.TrafficStart)
	if span <= 0 {
		return 0
	}
	return float64(r.TrafficOps) / span.Seconds()
}

func (d *driver) stopTraffic() {
	if d.stopped.Load() {
		return
	}
	d.drainUntil.Store(time.Now().Add(d.cfg.DrainTimeout).UnixNano())
	d.stopped.Store(true)
}

// pastDrain reports whether traffic is over and the drain deadline has
// passed: no more retries are scheduled.
func (d *driver) pastDrain() bool {
	return d.stopped.Load() && time.Now().UnixNano() > d.drainUntil.Load()
}

func (d *driver) engineOptions() []idem.Option {
	e := d.cfg.Engine
	opts := []idem.Option{
		idem.WithLeaseTTL(e.LeaseTTL),
		idem.WithHeartbeat(e.Heartbeat),
		idem.WithRetention(e.Retention),
	}
	if e.ConflictWait > 0 {
		opts = append(opts, idem.WithConflictWait(e.ConflictWait, 0))
	}
	if e.Recovery {
		r := d.cfg.Sink.(Recoverer)
		opts = append(opts, idem.WithRecovery(func(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
			return recoverDressed(ctx, r, l)
		}))
	}
	if d.faults != nil {
		if h := d.faults.Hook(); h != nil {
			opts = append(opts, idem.WithHook(h))
		}
	}
	// Every lease step goes into the history (I7, I8).
	opts = append(opts, idem.WithObserver(d.observeLease))
	return opts
}

// do runs execution x's call: through the engine, whose observer records
// its lease steps under x's client and execution id, or through the sink's
// own transaction for a TxSink.
func (d *driver) do(ctx context.Context, x *execution, fp idem.Fingerprint, fn idem.Func) (idem.Result, error) {
	if d.tx == nil {
		ctx, fn = d.withLeaseCall(ctx, x, d.now(), fn)
		return d.engineOf(x.client).Do(ctx, x.key, fp, fn)
	}
	return d.tx.Do(ctx, x.key, fp, d.txOpts, fn)
}

// closedLoop runs Clients clients until traffic stops.
func (d *driver) closedLoop(ctx context.Context) {
	var wg sync.WaitGroup
	for id := range d.cfg.Clients {
		wg.Go(func() {
			c := d.newClient(id)
			src := newSource(&d.cfg.Keys, d.cfg.Seed, id, d.cfg.Clients, &d.box)
			src.bounded, src.left = d.cfg.Requests > 0, d.quota(id)
			for !d.stopped.Load() && ctx.Err() == nil {
				if d.cfg.Batch > 1 {
					dls := src.pull(d.cfg.Batch)
					if len(dls) == 0 {
						if !src.waitCopy(ctx) {
							break
						}
						continue
					}
					c.deliverBatch(ctx, dls)
					continue
				}
				dl, ok := src.next()
				if !ok {
					if !src.waitCopy(ctx) {
						break
					}
					continue
				}
				c.deliver(ctx, dl)
			}
			d.mergePending(c)
		})
	}
	wg.Wait()
}

// openLoop paces requests at Rate and hands them to Clients workers.
func (d *driver) openLoop(ctx context.Context, tl0 int64) {
	jobs := make(chan delivery, d.cfg.Clients)
	var wg sync.WaitGroup
	for id := range d.cfg.Clients {
		wg.Go(func() {
			c := d.newClient(id)
			for dl := range jobs {
				if d.now()-dl.intended > int64(d.cfg.LateAfter) {
					d.late.Add(1)
				}
				if d.cfg.Batch > 1 {
					c.deliverBatch(ctx, pullMore(jobs, dl, d.cfg.Batch))
					continue
				}
				c.deliver(ctx, dl)
			}
			d.mergePending(c)
		})
	}
	d.pace(ctx, jobs, tl0)
	close(jobs)
	wg.Wait()
}

// pace sends the schedule of intended requests (and due copies) to jobs
// until traffic stops. Sends that fall behind are not skipped: they go out
// late, with their intended time, so the delay shows in their latency.
func (d *driver) pace(ctx context.Context, jobs chan<- delivery, tl0 int64) {
	src := newSource(&d.cfg.Keys, d.cfg.Seed, d.cfg.Clients, d.cfg.Clients, &d.box)
	t0 := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := int64(0); ; i++ {
		off := time.Duration(float64(i) * float64(time.Second) / d.cfg.Rate)
		if (d.cfg.Duration > 0 && off >= d.cfg.Duration) || d.stopped.Load() {
			return
		}
		if d.cfg.Requests > 0 && i >= d.cfg.Requests {
			d.paceCopies(ctx, jobs, t0, tl0, timer)
			return
		}
		at := t0.Add(off)
		if !waitUntil(ctx, timer, at) {
			return
		}
		for {
			c, ok := d.takeCopy(at, t0, tl0)
			if !ok {
				break
			}
			if !send(ctx, jobs, c) {
				return
			}
		}
		dl := src.fresh()
		dl.intended = tl0 + int64(off)
		if !send(ctx, jobs, dl) {
			return
		}
	}
}

// paceCopies sends the copies still in the mailbox, each when it is due,
// once a count-bounded open loop has sent its last request.
func (d *driver) paceCopies(ctx context.Context, jobs chan<- delivery, t0 time.Time, tl0 int64, timer *time.Timer) {
	for !d.stopped.Load() {
		due, ok := d.box.nextDue()
		if !ok {
			return
		}
		if !waitUntil(ctx, timer, due) {
			return
		}
		c, ok := d.takeCopy(due, t0, tl0)
		if !ok {
			continue
		}
		if !send(ctx, jobs, c) {
			return
		}
	}
}

// takeCopy takes the earliest copy in the mailbox if it is due by at, with
// its intended send time: its due time on the run's timeline, where tl0 is
// the instant t0.
func (d *driver) takeCopy(at, t0 time.Time, tl0 int64) (delivery, bool) {
	c, ok := d.box.take(at)
	if ok {
		c.intended = tl0 + int64(c.due.Sub(t0))
	}
	return c, ok
}

// waitUntil waits on timer until at; it returns false when ctx ends
// first.
func waitUntil(ctx context.Context, timer *time.Timer, at time.Time) bool {
	if wait := time.Until(at); wait > 0 {
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
	}
	return true
}

// quota returns how many logical requests client id of a count-bounded
// closed loop sends: the clients share Config.Requests evenly.
func (d *driver) quota(id int) int64 {
	n, k := d.cfg.Requests, int64(d.cfg.Clients)
	q := n / k
	if int64(id) < n%k {
		q++
	}
	return q
}

func send(ctx context.Context, jobs chan<- delivery, dl delivery) bool {
	select {
	case jobs <- dl:
		return true
	case <-ctx.Done():
		return false
	}
}

// mergePending adds a client's keys for the liveness probe, and its last
// key as a sample, so that I6 is checked even when every delivery was
// answered.
func (d *driver) mergePending(c *client) {
	d.mu.Lock()
	maps.Copy(d.pending, c.pending)
	if c.last != "" {
		d.pending[c.last] = c.lastSeq
	}
	d.mu.Unlock()
}

// probeKeys returns the keys for the liveness probe, sorted.
func (d *driver) probeKeys() []ProbeKey {
	keys := make([]ProbeKey, 0, len(d.pending))
	for k, seq := range d.pending {
		keys = append(keys, ProbeKey{Key: k, Seq: seq})
	}
	slices.SortFunc(keys, func(a, b ProbeKey) int { return strings.Compare(a.Key, b.Key) })
	return keys
}
