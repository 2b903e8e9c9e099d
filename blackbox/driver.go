package blackbox

import (
	"bytes"
	"context"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idembench/idembench/history"
)

// driver sends the workload to the service and records every attempt.
type driver struct {
	spec   *Spec
	op     *Operation
	client *http.Client
	base   func() string // where requests go (the fault proxy or the service)
	svc    *Fields
	rec    *history.Recorder
	now    func() int64
	prefix string

	keys    *keyTable // keys the probe must call, resource ids
	tally   *answerTally
	last    []keyState // per client, its last key (written by its own goroutine)
	lastKey []string
}

// keyState is what the liveness probe needs to know about a key: its
// number and a client that delivered it.
type keyState struct {
	seq    int64
	client int
}

// resourceAnswer is one success with the resource id it named.
type resourceAnswer struct {
	key, id, resp string
	call, ret     int64
}

// delivery is one delivery of a logical request: the original or a copy.
type delivery struct {
	req      int64
	key      string
	seq      int64
	mismatch bool
	intended int64
}

// source draws the logical requests of one client from its own stream.
type source struct {
	rng    *rand.Rand
	zipf   *rand.Zipf
	client int
	n      int64
	last   *delivery
}

func (d *driver) newSource(client int) *source {
	k := &d.spec.Keys
	s := &source{rng: rand.New(rand.NewPCG(uint64(d.spec.Seed), uint64(client)+1)), client: client}
	if k.Dist == "zipf" {
		s.zipf = rand.NewZipf(s.rng, k.ZipfS, 1, uint64(k.Space-1))
	}
	return s
}

// next returns the next logical request of s and how many concurrent and
// delayed copies it gets.
func (d *driver) next(s *source) (delivery, int, int) {
	k := &d.spec.Keys
	s.n++
	dl := delivery{req: int64(s.client)<<32 | s.n}
	if k.MismatchRate > 0 && s.last != nil && s.rng.Float64() < k.MismatchRate {
		dl.key, dl.seq, dl.mismatch = s.last.key, s.last.seq, true
		return dl, 0, 0
	}
	if s.zipf != nil {
		rank := int64(s.zipf.Uint64())
		dl.seq = rank + 1
		dl.key = d.prefix + "-z" + strconv.FormatInt(rank, 10)
	} else {
		dl.seq = (s.n-1)*int64(d.spec.Clients) + int64(s.client) + 1
		dl.key = d.prefix + "-" + strconv.Itoa(s.client) + "-" + strconv.FormatInt(s.n, 10)
	}
	last := dl
	s.last = &last
	if k.Concurrent+k.Delayed > 0 && s.rng.Float64() < k.DupFraction {
		return dl, k.Concurrent, k.Delayed
	}
	return dl, 0, 0
}

// run sends traffic until stop and then waits for every delivery,
// copies included, to finish (bounded by drain).
func (d *driver) run(ctx context.Context, stop, drain time.Time) {
	d.last, d.lastKey = make([]keyState, d.spec.Clients), make([]string, d.spec.Clients)
	var copies sync.WaitGroup
	if d.spec.Rate > 0 {
		d.openLoop(ctx, stop, drain, &copies)
	} else {
		d.closedLoop(ctx, stop, drain, &copies)
	}
	copies.Wait()
}

func (d *driver) closedLoop(ctx context.Context, stop, drain time.Time, copies *sync.WaitGroup) {
	var wg sync.WaitGroup
	for c := range d.spec.Clients {
		wg.Go(func() {
			s := d.newSource(c)
			for ctx.Err() == nil && time.Now().Before(stop) {
				dl, conc, delayed := d.next(s)
				d.last[c], d.lastKey[c] = keyState{seq: dl.seq, client: c}, dl.key
				var same sync.WaitGroup
				for i := range conc {
					same.Go(func() { d.deliver(ctx, dl, c, d.spec.Clients+c*(conc+1)+i, drain) })
				}
				d.scheduleDelayed(ctx, dl, c, delayed, drain, copies, nil)
				d.deliver(ctx, dl, c, c, drain)
				same.Wait()
			}
		})
	}
	wg.Wait()
}

func (d *driver) openLoop(ctx context.Context, stop, drain time.Time, copies *sync.WaitGroup) {
	// Each sender is a client of the history: the pacer's requests have no
	// client of their own.
	jobs := make(chan delivery, 1<<14)
	var wg sync.WaitGroup
	for w := range d.spec.Clients {
		wg.Go(func() {
			for dl := range jobs {
				d.deliver(ctx, dl, w, w, drain)
			}
		})
	}
	s := d.newSource(0)
	interval := time.Duration(float64(time.Second) / d.spec.Rate)
	start := time.Now()
	origin := d.now()
	var pending sync.WaitGroup // delayed copies still to be queued
	for i := int64(0); ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(stop) {
			break
		}
		if w := time.Until(due); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
			}
		}
		dl, conc, delayed := d.next(s)
		d.last[0], d.lastKey[0] = keyState{seq: dl.seq}, dl.key
		dl.intended = origin + int64(time.Duration(i)*interval)
		for range conc + 1 {
			jobs <- dl
		}
		d.scheduleDelayed(ctx, dl, 0, delayed, drain, &pending, func(c delivery) { jobs <- c })
	}
	pending.Wait()
	close(jobs)
	wg.Wait()
}

// scheduleDelayed delivers n delayed copies of dl, the i-th i*Delay after
// now, unless the drain deadline has passed by then. With queue set, the
// copy is handed to it (open loop) instead of being sent from here.
func (d *driver) scheduleDelayed(ctx context.Context, dl delivery, client, n int, drain time.Time, wg *sync.WaitGroup, queue func(delivery)) {
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			delay := time.Duration(i) * d.spec.Keys.Delay
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			if time.Now().After(drain) {
				return
			}
			c := dl
			if c.intended != 0 {
				c.intended += int64(delay)
			}
			if queue != nil {
				queue(c)
				return
			}
			d.deliver(ctx, c, client, d.spec.Clients*(2+d.spec.Keys.Concurrent)+client*n+i, drain)
		})
	}
}

// deliver sends one delivery, retrying per Spec.Retry, and records every
// attempt. It returns whether a final answer arrived.
func (d *driver) deliver(ctx context.Context, dl delivery, client, worker int, drain time.Time) bool {
	f := d.op.fields(d.spec.Seed, dl.key, dl.seq, dl.mismatch, d.svc)
	r, err := d.op.build(&f)
	if err != nil {
		return false // Validate rendered the templates; cannot happen
	}
	rt := &d.spec.Retry
	backoff := rt.Backoff
	final, unknown := false, false
	for attempt := 1; attempt <= rt.MaxAttempts && ctx.Err() == nil; attempt++ {
		if attempt > 1 && time.Now().After(drain) {
			break
		}
		op := d.attempt(ctx, &r, dl, client, worker, attempt, false)
		unknown = unknown || op.Outcome == history.Unknown
		if final = op.final; final {
			break
		}
		if attempt < rt.MaxAttempts && backoff > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, rt.MaxBackoff)
		}
	}
	if !final || unknown {
		d.keys.markOpen(dl.key, keyState{seq: dl.seq, client: client})
	}
	return final
}

// probeTimeout is the least time a liveness probe waits for its answer.
const probeTimeout = 5 * time.Second

// recorded is an attempt's op plus whether it got a final answer.
type recorded struct {
	history.Op
	final bool
}

// attempt sends one attempt with the client timeout and records it.
func (d *driver) attempt(ctx context.Context, r *request, dl delivery, client, worker, attempt int, probe bool) recorded {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if t := d.spec.Retry.Timeout; t > 0 {
		if probe {
			t = max(t, probeTimeout) // liveness asks for an answer, not a fast one
		}
		actx, cancel = context.WithTimeout(ctx, t)
	}
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer bodyBufs.Put(buf)
	call := d.now()
	a := send(actx, d.client, d.base(), r, d.op.KeyHeader, dl.key, nil, "", buf)
	ret := d.now()
	cancel()
	out, final := d.op.classify(&a)
	if !out.Success() {
		d.tally.add(&a)
	}
	op := history.Op{
		Kind: history.KindCall, Client: client, Worker: worker, Key: dl.key,
		Request: dl.req, Attempt: attempt, FP: r.fp, Call: call, Return: ret,
		Intended: dl.intended, Outcome: out, Probe: probe,
	}
	if attempt > 1 {
		op.Intended = 0 // a retry is sent when the client decides, not on a schedule
	}
	if out.HasResponse() {
		op.Resp = digest(a.status, a.body)
	}
	if a.err != nil {
		op.Err = a.err.Error()
	} else if !out.Success() && out != history.Failed {
		op.Err = "HTTP " + strconv.Itoa(a.status)
	}
	if out.Success() {
		if id := d.op.resourceID(&a); id != "" {
			op.Label = "resource " + id
			d.keys.addID(resourceAnswer{key: dl.key, id: id, resp: op.Resp, call: call, ret: ret})
		} else if d.op.ResourceID == "" {
			d.keys.addID(resourceAnswer{key: dl.key, id: op.Resp, resp: op.Resp, call: call, ret: ret})
		}
	}
	d.rec.Record(op)
	return recorded{op, final}
}

// probe calls every key that needs it once more, with Probe set: keys
// whose delivery ended without a final answer or saw an unknown outcome,
// and each client's last key.
func (d *driver) probe(ctx context.Context) {
	open := d.keys.openKeys()
	for c, k := range d.lastKey {
		if _, ok := open[k]; k != "" && !ok {
			open[k] = d.last[c]
		}
	}
	keys := slices.Sorted(maps.Keys(open))
	states := make([]keyState, len(keys))
	for i, k := range keys {
		states[i] = open[k]
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, d.spec.Clients)
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f := d.op.fields(d.spec.Seed, k, states[i].seq, false, d.svc)
			r, err := d.op.build(&f)
			if err != nil {
				return
			}
			d.attempt(ctx, &r, delivery{key: k, seq: states[i].seq}, states[i].client, -1, 1, true)
		})
	}
	wg.Wait()
}
