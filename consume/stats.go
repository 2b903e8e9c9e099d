package consume

import (
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// counters are the run's live counts.
type counters struct {
	deliveries, redeliveries, acked, requeued, deadLetterActions atomic.Int64
	settleErrors, publishRetries                                 atomic.Int64
	restarts, serverRestarts                                     atomic.Int64
	batches, batchedDeliveries                                   atomic.Int64
}

// Stats are the message-level figures of a run.
type Stats struct {
	// Messages is the number of distinct messages; Published the copies
	// published (Messages plus the publisher's duplicates), of which
	// Duplicates were planned and PublishRetries were retries after a
	// failed publish (each may or may not have duplicated its message).
	Messages       int `json:"messages"`
	Published      int `json:"published"`
	Duplicates     int `json:"duplicates"`
	PublishRetries int `json:"publish_retries"`
	// Deliveries counts the deliveries consumers received; Redeliveries
	// those the broker marked as redelivered (RabbitMQ's redelivered flag,
	// NATS's delivery count above 1).
	Deliveries   int `json:"deliveries"`
	Redeliveries int `json:"redeliveries"`
	// Acked, Requeued (immediately or after a delay) and DeadLetterActions
	// count the settle calls that went through; SettleErrors those that
	// failed. DeadLettered is what the dead-letter queue or stream held at
	// the end.
	Acked             int `json:"acked"`
	Requeued          int `json:"requeued"`
	DeadLetterActions int `json:"dead_letter_actions"`
	SettleErrors      int `json:"settle_errors"`
	DeadLettered      int `json:"dead_lettered"`
	// Batches counts the pulled batches a batch run (Config.Batch)
	// processed with one ConsumeBatch each, BatchedDeliveries the
	// deliveries in them; both are 0 message by message.
	Batches           int `json:"batches"`
	BatchedDeliveries int `json:"batched_deliveries"`
	// Crashes, Pauses, Overlaps, Restarts and ServerRestarts count the
	// faults that struck.
	Crashes        int `json:"crashes"`
	Pauses         int `json:"pauses"`
	Overlaps       int `json:"overlaps"`
	Restarts       int `json:"restarts"`
	ServerRestarts int `json:"server_restarts"`
	// Applied counts the effects the sink applied, DoubledKeys the keys
	// with more than one (each an at-most-once violation).
	Applied     int `json:"applied"`
	DoubledKeys int `json:"doubled_keys"`
	// Duration runs from the run's start to the end of draining;
	// Throughput is distinct messages per second of it.
	Duration   time.Duration `json:"duration_ns"`
	Throughput float64       `json:"throughput_per_s"`
	// EndToEnd is the latency from a message's first publish to its first
	// applied effect, over the messages that have one.
	EndToEnd LatencyStats `json:"end_to_end"`
}

// LatencyStats summarizes a set of latencies (exact, from all samples).
type LatencyStats struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

func latencyStats(v []time.Duration) LatencyStats {
	if len(v) == 0 {
		return LatencyStats{}
	}
	slices.Sort(v)
	at := func(p float64) time.Duration { return v[min(len(v)-1, int(p*float64(len(v))))] }
	return LatencyStats{Count: len(v), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: v[len(v)-1]}
}

// result checks the history and gathers the figures.
func (r *runner) result(start time.Time, resources []string) *Result {
	res := r.gather(start, resources)
	res.Report = checker.Check(res.History, checker.Options{})
	return res
}

// gather returns the history and the figures so far, unchecked.
func (r *runner) gather(start time.Time, resources []string) *Result {
	dur := r.drainedAt.Sub(start)
	h := r.rec.History(r.header(start))
	ledger := r.sink.Ledger()
	h.ResolveEffects(func(op *history.Op) (bool, bool) { return ledger.Lookup(op.Key, op.Exec) })
	ls := ledger.Stats()
	s := Stats{
		Messages: len(r.plan.msgs), Published: int(r.pub.count.Load()), Duplicates: max(0, int(r.pub.count.Load())-len(r.plan.msgs)),
		PublishRetries: int(r.c.publishRetries.Load()),
		Deliveries:     int(r.c.deliveries.Load()), Redeliveries: int(r.c.redeliveries.Load()),
		Acked: int(r.c.acked.Load()), Requeued: int(r.c.requeued.Load()),
		DeadLetterActions: int(r.c.deadLetterActions.Load()), SettleErrors: int(r.c.settleErrors.Load()),
		Crashes: r.plan.crash.struck(), Pauses: r.plan.pause.struck(), Overlaps: r.plan.hold.struck(),
		Restarts: int(r.c.restarts.Load()), ServerRestarts: int(r.c.serverRestarts.Load()),
		Batches: int(r.c.batches.Load()), BatchedDeliveries: int(r.c.batchedDeliveries.Load()),
		Applied: ls.Applied, DoubledKeys: ls.Doubled, Duration: dur,
	}
	if dur > 0 {
		s.Throughput = float64(len(r.plan.msgs)) / dur.Seconds()
	}
	r.mu.Lock()
	var e2e []time.Duration
	for k, at := range r.effected {
		if p, ok := r.published[k]; ok {
			e2e = append(e2e, time.Duration(at-p))
		}
	}
	r.mu.Unlock()
	s.EndToEnd = latencyStats(e2e)
	return &Result{History: h, Stats: s, Resources: resources}
}

// header describes the run for the history and its reports.
func (r *runner) header(start time.Time) history.Header {
	c := r.cfg
	engine := "broker-only"
	backend := "none"
	if !c.BrokerOnly {
		engine = c.Sink
		if c.Recovery {
			engine += "+recovery"
		}
		backend = c.StoreName
		if backend == "" {
			backend = "memstore"
		}
	}
	f := c.Faults
	return history.Header{
		Tool: "idembench consume", Scenario: "consume-" + c.Broker, Seed: c.Seed, Backend: backend, Engine: engine,
		Start: start, LeaseTTL: c.LeaseTTL,
		Options: map[string]string{
			"broker": c.Broker, "messages": strconv.Itoa(c.Messages), "duplicate_rate": strconv.FormatFloat(c.DuplicateRate, 'g', -1, 64),
			"poison": strconv.Itoa(c.Poison), "consumers": strconv.Itoa(c.Consumers), "prefetch": strconv.Itoa(c.Prefetch),
			"ack_wait": c.AckWait.String(), "crash_before_ack": strconv.Itoa(f.CrashBeforeAck), "pause": strconv.Itoa(f.Pause),
			"overlap": strconv.Itoa(f.Overlap), "batch": strconv.Itoa(max(c.Batch, 1)), "batch_linger": c.BatchLinger.String(),
			"pause_for": f.PauseFor.String(), "restarts": strconv.Itoa(f.Restarts), "server_restart": strconv.FormatBool(f.ServerRestart),
		},
	}
}
