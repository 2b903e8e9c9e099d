package workload

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Limits of Config.Completer (see the package doc).
const (
	// MaxCompleters bounds Completer.Count.
	MaxCompleters = 100
	// MinCompleterEvery is the shortest Completer.Every: every pass lists
	// the store's stuck keys.
	MinCompleterEvery = time.Millisecond
)

// Completer runs background completers during a run: Count of them at
// once, from the start of the traffic until the liveness probe, each
// finishing the run's stuck keys every Every (idem.Engine.RunCompleter on
// an engine of its own, with the run's recovery hook and lease observer).
// They see only the keys of the run (Keys.Prefix, through
// idem.PrefixLister when the store has it), so that a run on a shared
// server leaves other runs' keys alone.
//
// A run with completers probes differently (see the package doc): each
// probed key is first read, not called, so that the liveness invariant
// (I6) is judged on what the completers left and not on what a retry
// would repair. The zero value runs none.
type Completer struct {
	// Count is the number of completers; 0 runs none.
	Count int
	// Every is the interval between two passes of one completer. Required
	// when Count > 0, at least MinCompleterEvery, at most MaxWait.
	Every time.Duration
	// OlderThan makes a pass leave alone the leases that expired less than
	// this long ago (idem.Lister); at most MaxWait.
	OlderThan time.Duration
	// Pass, when set, replaces the reference completer: it is called every
	// Every with the run's store (listing the run's keys only) and a look
	// at the sink's ledger that says whether key's effect was applied and
	// with which response, without fencing anything. It is how a known-bad
	// completer is run (naive.UnfencedCompleter); it needs a sink whose
	// ledger is in this process (LedgerKeeper). Its errors are ignored,
	// as RunCompleter ignores a failed pass.
	Pass CompleterPass
}

// CompleterPass is one pass of a completer over the stuck keys of st.
type CompleterPass func(ctx context.Context, st idem.Store, look func(key string) (idem.Response, bool)) error

// limits checks the fields of c.
func (c Completer) limits() error {
	for _, err := range []error{
		intRange("completer.count", c.Count, 0, MaxCompleters),
		optional("completer.every", c.Every, MinCompleterEvery, MaxWait),
		between("completer.older_than", c.OlderThan, 0, MaxWait, "at least 0"),
	} {
		if err != nil {
			return err
		}
	}
	if c.Count > 0 && c.Every == 0 {
		return fieldErr("completer.every", "required with completers (count %d)", c.Count)
	}
	return nil
}

// checkRun checks what running the completers needs of cfg's store and
// sink.
func (c Completer) checkRun(cfg *Config) error {
	if c.Count == 0 {
		return nil
	}
	if _, ok := cfg.Store.(idem.Lister); !ok {
		return configErr("completer: the store cannot list stuck keys (no idem.Lister)")
	}
	if c.Pass != nil {
		if _, ok := cfg.Sink.(LedgerKeeper); !ok {
			return configErr("completer: the sink %q keeps no ledger in this process to look effects up in", cfg.Sink.Name())
		}
		return nil
	}
	if !cfg.Engine.Recovery {
		return configErr("completer: the reference completer needs the recovery hook (engine recovery on, with the fenced sink)")
	}
	return nil
}

// probeWait is how much longer than a lease TTL the liveness probe waits
// in a run with completers, before it waits for their passes: the age a
// pass leaves alone.
func (c Completer) probeWait() time.Duration {
	return c.OlderThan
}

// MaxCompleterPassWait bounds how long the liveness probe of a run with
// completers waits, once every abandoned lease has expired, for each
// completer to make a whole pass; a completer slower than that leaves its
// keys to the probe's verdict.
const MaxCompleterPassWait = 30 * time.Second

// completers are the running completers of a run.
type completers struct {
	stores []*prefixStore // one per completer, counting its passes
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// stop ends the completers and waits for them; it may be called again.
func (cs *completers) stop() {
	if cs == nil {
		return
	}
	cs.cancel()
	cs.wg.Wait()
}

// awaitPasses waits until every completer has made a whole pass that
// started after the call (it has begun two passes since: a pass is
// counted when it lists the stuck keys), or until MaxCompleterPassWait
// has passed or ctx ends.
func (cs *completers) awaitPasses(ctx context.Context) {
	if cs == nil {
		return
	}
	marks := make([]int64, len(cs.stores))
	for i, st := range cs.stores {
		marks[i] = st.lists.Load()
	}
	deadline := time.NewTimer(MaxCompleterPassWait)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for i, st := range cs.stores {
			done = done && st.lists.Load() >= marks[i]+2
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// startCompleters starts the run's completers; nil when it has none.
func (d *driver) startCompleters(ctx context.Context) *completers {
	c := d.cfg.Completer
	if c.Count == 0 {
		return nil
	}
	prefix, err := idem.StorageKey(d.cfg.Keys.Prefix)
	if err != nil { // the prefix was validated as a key
		prefix = d.cfg.Keys.Prefix
	}
	cctx, cancel := context.WithCancel(ctx)
	cs := &completers{cancel: cancel}
	for i := range c.Count {
		st := &prefixStore{Store: d.cfg.Store, prefix: prefix}
		cs.stores = append(cs.stores, st)
		cc := &completerCall{client: d.cfg.ClientBase + d.cfg.Clients + 1 + probeWorkers + i}
		cc.floor.Store(d.now())
		cs.wg.Go(func() {
			if c.Pass != nil {
				d.runPasses(cctx, st, c)
				return
			}
			eng := idem.New(st, d.completerOptions()...)
			defer eng.Close()
			_ = eng.RunCompleter(context.WithValue(cctx, completerKey{}, cc), c.Every, c.OlderThan)
		})
	}
	return cs
}

// completerOptions are the options of a completer's engine: the run's
// lease TTL, retention and recovery hook, and the lease observer; no
// fault hook (faults aim at the clients' executions).
func (d *driver) completerOptions() []idem.Option {
	e := d.cfg.Engine
	r := d.cfg.Sink.(Recoverer) // checkRun: recovery is on
	return []idem.Option{
		idem.WithLeaseTTL(e.LeaseTTL),
		idem.WithRetention(e.Retention),
		idem.WithRecovery(func(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
			return recoverDressed(ctx, r, l)
		}),
		idem.WithObserver(d.observeLease),
	}
}

// runPasses calls c.Pass every c.Every until ctx ends.
func (d *driver) runPasses(ctx context.Context, st idem.Store, c Completer) {
	ledger := d.cfg.Sink.(LedgerKeeper).Ledger() // checkRun
	look := func(key string) (idem.Response, bool) {
		if es := ledger.Applied(key); len(es) > 0 {
			return es[0].Response, true
		}
		return idem.Response{}, false
	}
	t := time.NewTicker(c.Every)
	defer t.Stop()
	for {
		_ = c.Pass(ctx, st, look)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// completerCall identifies a completer to the lease recorder, as leaseCall
// identifies a client's call. floor is the latest moment known to precede
// the completer's next store call: its previous observation (one completer
// works on one goroutine and the engine calls the observer synchronously),
// or its start.
type completerCall struct {
	client int
	floor  atomic.Int64
}

type completerKey struct{}

// completerOp returns the lease op of a completer's step ev, observed at
// now, or false when ctx is not a completer's.
func completerOp(ctx context.Context, ev idem.Event, now int64) (history.Op, bool) {
	c, _ := ctx.Value(completerKey{}).(*completerCall)
	if c == nil {
		return history.Op{}, false
	}
	call := c.floor.Swap(now)
	return history.Op{
		Kind:   history.KindLease,
		Client: c.client,
		Worker: c.client,
		Key:    ev.Key,
		Exec:   "c" + strconv.Itoa(c.client),
		Call:   min(call, now),
		Return: now,
		Token:  uint64(ev.Token),
	}, true
}

// prefixStore is the run's store as its completers see it: ListStuck lists
// the stuck keys that start with prefix only.
type prefixStore struct {
	idem.Store
	prefix string
	lists  atomic.Int64 // ListStuck calls begun
}

var _ idem.Lister = (*prefixStore)(nil)

// prefixListLimit is how many records a prefixStore asks a store without
// idem.PrefixLister for, before it drops the other prefixes' records.
const prefixListLimit = 100 * idem.DefaultListLimit

// ListStuck lists the stuck records under the prefix: with the store's
// ListStuckPrefix when it has one, else by filtering its ListStuck.
func (s *prefixStore) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	s.lists.Add(1)
	if pl, ok := s.Store.(idem.PrefixLister); ok {
		return pl.ListStuckPrefix(ctx, s.prefix, olderThan, limit)
	}
	if limit <= 0 {
		limit = idem.DefaultListLimit
	}
	recs, err := s.Store.(idem.Lister).ListStuck(ctx, olderThan, prefixListLimit)
	out := recs[:0]
	for _, r := range recs {
		if strings.HasPrefix(r.Key, s.prefix) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, err
}
