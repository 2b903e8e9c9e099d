package consume

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// Result is a checked consumer run.
type Result struct {
	// History is the recorded run: one call op per processed delivery,
	// one effect op per effect attempt, fault windows.
	History *history.History
	// Report is the checker's verdict on History, as for `idembench run`.
	Report checker.Report
	// Stats are the message-level figures of the run.
	Stats Stats
	// Resources names the queues or streams the run created; Run removed
	// them before returning (unless the broker died).
	Resources []string
}

// cleanupTimeout bounds the removal of a run's queues or streams, and
// interruptedCleanup the same when the caller's ctx ended: a command cut
// short by Ctrl-C has 2 s in all.
const (
	cleanupTimeout     = 15 * time.Second
	interruptedCleanup = time.Second
)

// runner is one run in progress: the coordinator of its consumers.
type runner struct {
	cfg        *Config
	plan       *plan
	pub        *publisher
	b          broker
	n          *node // in-process consumers
	runID      string
	procs      procs // worker processes
	store      idem.Store
	sink       workload.LedgerKeeper
	recoverer  workload.Recoverer
	rec        *history.Recorder
	now        func() int64
	stop       chan struct{} // closed when the run ends: pauses give up
	closeStore func()        // closes a store the run created, or nil
	wg         sync.WaitGroup
	drainedAt  time.Time // when drive returned: the end of Stats.Duration

	consumers atomic.Int64
	settled   atomic.Int64 // acks and dead-letters that went through
	pausing   atomic.Int64 // consumers paused right now
	c         counters
	mu        sync.Mutex
	holdMu    sync.Mutex
	overlaps  map[string]*overlap // Faults.Overlap's handshakes, by key
	published map[string]int64    // first publish time per key
	effected  map[string]int64    // first applied effect per key
}

// Run publishes the configured messages with duplicates to a fresh queue
// (RabbitMQ) or stream (NATS), consumes them with Config.Consumers
// consumers under the configured faults until every copy is acked or
// dead-lettered, checks the recorded history with the checker and removes
// what it created, also when ctx is cancelled. Every wait of the run
// (the handlers' Latency included) ends with ctx or Config.Timeout.
//
// An invalid Config wraps ErrConfig (before Run connects to anything); a
// broker that cannot be reached, or whose connection dies during the run
// (not the planned Faults.ServerRestart), wraps ErrBroker and names the
// connection that died. A run that does not drain within Config.Timeout
// returns its checked Result and ErrNotDrained. A cancelled ctx returns
// ctx.Err() within about a second, with the Result so far: its History
// and Stats, unchecked (a zero Report), and Resources, removed all the
// same. A broker that died returns its Result so far the same way; its
// Resources may be left on the broker.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = history.Now
	}
	runID := "r" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36) + "s" + strconv.FormatInt(cfg.Seed, 10)
	r := &runner{cfg: &cfg, plan: newPlan(&cfg, runID), runID: runID, rec: history.NewRecorder(), now: cfg.Now,
		stop: make(chan struct{}), published: map[string]int64{}, effected: map[string]int64{},
		procs: procs{live: map[int]*proc{}}}
	r.pub = &publisher{r: r}
	if err := r.setupEngine(); err != nil {
		return nil, err
	}
	defer r.closeEngine()
	b, err := openBroker(ctx, &cfg, runID, true)
	if err != nil {
		return nil, err
	}
	r.b, r.n.b = b, b
	start := time.Now()
	drainErr := r.drive(ctx)
	r.drainedAt = time.Now()
	close(r.stop)
	cut := ctx.Err() != nil || errors.Is(drainErr, ErrBroker)
	r.stopWorkers(cut)
	r.wg.Wait()
	if drainErr == nil {
		r.probe(ctx)
	}
	if cut {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptedCleanup)
		closeErr := b.close(cctx)
		cancel()
		res := r.gather(start, b.resources())
		if ctx.Err() != nil {
			return res, errors.Join(ctx.Err(), closeErr)
		}
		if closeErr != nil {
			return res, fmt.Errorf("%w (left on the broker: %s; %v)", drainErr, strings.Join(res.Resources, ", "), closeErr)
		}
		return res, drainErr
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	dead, dlErr := b.deadLettered(cctx)
	closeErr := b.close(cctx)
	cancel()
	if closeErr != nil {
		return nil, fmt.Errorf("%w: cleanup: %v", ErrBroker, closeErr)
	}
	res := r.result(start, b.resources())
	res.Stats.DeadLettered = dead
	return res, errors.Join(drainErr, dlErr)
}

// openBroker opens the run's queues or streams, as their owner or not
// (see newRabbit and newNATS).
func openBroker(ctx context.Context, cfg *Config, run string, owner bool) (broker, error) {
	if cfg.Broker == RabbitMQ {
		return newRabbit(ctx, cfg, run, owner)
	}
	return newNATS(ctx, cfg, run, owner)
}

// setupEngine builds the sink, the store and the in-process node.
func (r *runner) setupEngine() error {
	sinkName := r.cfg.Sink
	if r.cfg.BrokerOnly {
		sinkName = workload.SinkPlain
	}
	sink, err := workload.NewSink(sinkName)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	r.sink = sink
	if r.cfg.Recovery && !r.cfg.BrokerOnly {
		r.recoverer = sink.(workload.Recoverer)
	}
	r.n = &node{co: r, latency: r.cfg.Latency, now: r.now, ended: r.consumerEnded, batch: r.cfg.Batch, linger: r.cfg.BatchLinger}
	if r.cfg.BrokerOnly {
		return nil
	}
	r.store = r.cfg.Store
	if r.store == nil {
		ms := memstore.New(memstore.Options{})
		r.store, r.closeStore = ms, func() { ms.Close() }
	}
	r.n.newEngine(r.store, r.cfg.LeaseTTL, r.cfg.Recovery)
	return nil
}

// startConsumer starts a new in-process consumer (a new id, its own
// channel or subscription). With restartAfter > 0 it restarts itself once
// after that many deliveries.
func (r *runner) startConsumer(ctx context.Context, restartAfter int) {
	id := int(r.consumers.Add(1) - 1)
	r.wg.Go(func() { r.n.consume(ctx, id, restartAfter) })
}

// consumerEnded replaces an in-process consumer that crashed or
// restarted.
func (r *runner) consumerEnded(ctx context.Context, id int, crashed bool) {
	if !crashed {
		r.c.restarts.Add(1)
	}
	r.startConsumer(ctx, 0)
}

// drive starts the consumers, publishes, and waits until every copy is
// settled and the broker is drained, the timeout passes or ctx ends.
func (r *runner) drive(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	restartAfter := max(1, r.expectedCopies()/(2*r.cfg.Consumers))
	for i := range r.cfg.Consumers {
		if r.cfg.Processes {
			if err := r.startWorker(ctx); err != nil {
				return err
			}
			continue
		}
		after := 0
		if i < r.cfg.Faults.Restarts {
			after = restartAfter
		}
		r.startConsumer(ctx, after)
	}
	deadline := time.Now().Add(r.cfg.Timeout)
	pubErr := make(chan error, 1)
	go func() {
		_, err := workload.Run(ctx, r.traffic(r.pub))
		pubErr <- err
	}()
	published := false
	// A settle whose confirmation was lost (an ack during a server
	// restart) is not counted although the broker took it: once the
	// broker has held nothing for grace, the run is over all the same.
	grace := 2*r.cfg.AckWait + r.cfg.LeaseTTL + time.Second
	var drainedSince time.Time
	for {
		select {
		case err := <-pubErr:
			if err != nil {
				return err
			}
			published = true
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if err := r.b.lost(); err != nil {
			return fmt.Errorf("%w: %v", ErrBroker, err)
		}
		if published && r.pausing.Load() == 0 {
			ok, err := r.b.drained(ctx)
			switch {
			case err != nil || !ok:
				drainedSince = time.Time{}
			case r.settled.Load() >= r.pub.count.Load():
				return nil
			case drainedSince.IsZero():
				drainedSince = time.Now()
			case time.Since(drainedSince) > grace:
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d of %d copies settled after %s", ErrNotDrained, r.settled.Load(), r.pub.count.Load(), r.cfg.Timeout)
		}
	}
}

func (r *runner) restartServer(ctx context.Context) {
	start := r.now()
	err := r.b.restartServer(ctx)
	label := "restart nats-server (SIGTERM, start on the same store)"
	if err != nil {
		label += ": " + err.Error()
	}
	r.c.serverRestarts.Add(1)
	r.rec.Record(history.Fault(history.FaultRestart, label, start, r.now()))
}

func (r *runner) noteEffect(key string, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.effected[key]; !ok {
		r.effected[key] = at
	}
}

// closeEngine waits for the engine's heartbeat goroutine and closes a
// store the run created.
func (r *runner) closeEngine() {
	if r.n != nil && r.n.engine != nil {
		r.n.engine.Close()
	}
	if r.closeStore != nil {
		r.closeStore()
	}
}

// restartDue reports whether a worker restart is due before the first
// publish of message i: the restarts are spread evenly over the messages.
func (r *runner) restartDue(i int) bool {
	n := r.cfg.Faults.Restarts
	for j := 1; j <= n; j++ {
		if i == j*r.cfg.Messages/(n+1) {
			return true
		}
	}
	return false
}

// expectedCopies is the number of copies the run should publish: each
// message once, the duplicated share twice, the pause and overlap targets
// twice. Publish retries may add some.
func (r *runner) expectedCopies() int {
	n := float64(r.cfg.Messages) * (1 + max(0, r.cfg.DuplicateRate))
	return int(n) + r.cfg.Faults.Pause + r.cfg.Faults.Overlap
}
