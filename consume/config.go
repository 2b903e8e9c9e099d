package consume

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// Broker names for Config.Broker.
const (
	RabbitMQ = "rabbitmq"
	NATS     = "nats"
)

// Errors of Run. Callers test them with errors.Is.
var (
	// ErrConfig reports an invalid Config (exit code 2 in the CLI).
	ErrConfig = checker.Classed("consume: invalid configuration", checker.ErrUsage)
	// ErrBroker reports a broker that cannot be reached or set up, or a
	// private server that does not start (exit code 5).
	ErrBroker = checker.Classed("consume: broker unavailable", checker.ErrEnvironment)
	// ErrNotDrained reports a run whose messages were not all settled
	// within Config.Timeout: a message stuck in a redelivery loop or
	// never redelivered. Run still returns the checked Result. It is a
	// missed threshold (exit code 4).
	ErrNotDrained = checker.Classed("consume: messages not settled before the timeout", checker.ErrThreshold)
)

// Config describes one consumer run. Zero fields take the defaults given;
// a negative count or duration, and a value beyond its limit (MaxMessages
// and the other limits), is refused.
type Config struct {
	// Broker is RabbitMQ or NATS.
	Broker string
	// URL is the broker's URL (amqp://... or nats://...). A NATS run with
	// Faults.ServerRestart starts its own server and ignores URL.
	URL string
	// BrokerOnly consumes with no idempotency check at all: every delivery
	// applies its effect and is acked, as a consumer that trusts the
	// broker's delivery guarantee would. Store, Sink and Recovery are
	// ignored.
	BrokerOnly bool
	// Store is the engine's store; nil means a fresh in-memory store.
	// StoreName names it in the history header ("memstore" for nil).
	Store     idem.Store
	StoreName string
	// Sink is the effect sink: workload.SinkFenced (default) or
	// workload.SinkPlain.
	Sink string
	// Recovery installs the engine's recovery hook on the fenced sink (the
	// reference configuration: fenced sink + recovery). It needs
	// SinkFenced.
	Recovery bool
	// Messages is the number of distinct messages published (default 100,
	// at most MaxMessages).
	Messages int
	// DuplicateRate is the share of messages the publisher publishes a
	// second time, as a publisher retry would: at most 1 (default 0.2;
	// negative: none; NaN is refused).
	DuplicateRate float64
	// Poison is the number of messages whose handler always fails
	// permanently (default 0). They must end in the dead-letter path once
	// each, with no effect.
	Poison int
	// Consumers is the number of concurrent consumers (default 4, at most
	// MaxConsumers, or MaxProcesses with Processes).
	Consumers int
	// Prefetch is how many unacknowledged messages a consumer may hold
	// (default 2, or 1 in a run with pauses or overlaps: a stopped or
	// holding RabbitMQ consumer with a free prefetch slot would be handed
	// the duplicate that should reach another consumer; Batch in a batch
	// run, and never less; at most MaxPrefetch).
	Prefetch int
	// Batch, above 1, makes every consumer pull up to Batch messages at a
	// time and claim them together through idem.Engine.ConsumeBatch (the
	// adapters' ProcessBatch): with a store that implements
	// idem.BatchStore, one round trip claims the batch and one more
	// records its outcomes. RabbitMQ collects up to Batch deliveries
	// (prefetch Batch) for at most BatchLinger after the first; NATS pulls
	// with one Fetch(Batch) that waits at most BatchLinger. Each message is
	// still acked, requeued or dead-lettered on its own. 0 or 1 processes
	// message by message. At most MaxBatch; the batch's handlers
	// (Batch × Latency) must fit in half the lease; needs the engine (not
	// BrokerOnly).
	Batch int
	// BatchLinger bounds how long a batch waits to fill (default 20ms, at
	// most MaxBatchLinger).
	BatchLinger time.Duration
	// Latency is how long the business handler works before its effect
	// (default 2ms, at most MaxLatency). The handler stops working when
	// the run ends (its timeout, or ctx), not when its lease is lost: a
	// stale handler still writes, for the fenced sink to refuse.
	Latency time.Duration
	// LeaseTTL is the engine's lease (default 500ms, at most MaxLeaseTTL).
	LeaseTTL time.Duration
	// AckWait is the NATS consumer's ack wait (default 1s, at most
	// MaxAckWait); RabbitMQ redelivers when a consumer's channel closes,
	// with no timeout.
	AckWait time.Duration
	// RequeueDelay is the adapters' delay for a message whose key another
	// consumer holds (default 100ms, at most MaxRequeueDelay).
	RequeueDelay time.Duration
	// Processes runs every consumer in a worker process of its own, started
	// with WorkerCommand, so that faults are real signals: SIGKILL after
	// the effect and before the ack, SIGSTOP before the effect, SIGTERM for
	// a restart. The store, the effect sink and the history stay in this
	// process and serve the workers over the worker protocol of package
	// harness/multiproc, on the workers' stdin and stdout.
	Processes bool
	// WorkerCommand returns a command that runs multiproc.ServeWorker with
	// multiproc.Stdio, typically this binary with a hidden argument or
	// variable its main checks first (and that cancels its ctx on
	// SIGTERM). Run sets Stdin, Stdout and Stderr. Needed with Processes.
	WorkerCommand func() *exec.Cmd
	// Faults are the faults of the run.
	Faults Faults
	// Seed draws duplicates, poison messages and fault targets.
	Seed int64
	// Timeout bounds the run from the first publish (default 60s, at most
	// MaxTimeout).
	Timeout time.Duration
	// Now is the history clock (default history.Now).
	Now func() int64
}

// Faults are aimed at their windows: each picks its target messages from
// the seed and strikes at the engine's fault points (idem.WithHook), or, in
// a BrokerOnly run, right after the effect.
type Faults struct {
	// CrashBeforeAck is the number of consumers that die after the effect
	// of a message and before its ack (at idem.PointAfterFn): the delivery
	// is abandoned unacknowledged and the consumer's channel or
	// subscription closed (with Processes: the worker sends itself
	// SIGKILL), so the broker redelivers the message to another consumer;
	// a new consumer replaces the dead one.
	CrashBeforeAck int
	// Pause is the number of consumers that stall right before the effect
	// (at idem.PointBeforeFn, heartbeat stopped) past their lease and the
	// NATS ack wait, then go on as if nothing happened: for PauseFor, and
	// then until another consumer applied the message's effect (at most
	// 10 × PauseFor), so the paused one writes right behind its successor.
	// With Processes the worker is stopped with SIGSTOP and resumed with
	// SIGCONT.
	Pause int
	// PauseFor is the least a pause lasts (default 3 × max(LeaseTTL,
	// AckWait), at most MaxPauseFor).
	PauseFor time.Duration
	// Restarts is the number of consumer restarts, at most MaxRestarts: a
	// consumer closes its channel or subscription between deliveries (its
	// prefetched messages go back to the broker) and a new one takes its
	// place. In-process each consumer restarts once, so Restarts is at
	// most Consumers. With Processes a worker gets SIGTERM while the
	// publisher runs and is replaced.
	Restarts int
	// Overlap is the number of duplicated messages whose first copy to
	// reach its handler waits there, after its claim and before its
	// effect, until another copy of the message got past its own claim
	// (its handler started, or its consumer had the engine's answer), at
	// most half the lease: the duplicate meets the first copy in flight,
	// the case a store that writes nothing before the effect gets wrong.
	// Each target is published twice, the second copy 0 or 1 positions
	// later. Without the engine (BrokerOnly) the wait is in the handler.
	Overlap int
	// ServerRestart (NATS only) runs the broker as a private nats-server
	// with file storage and restarts it (SIGTERM, then start again on the
	// same port and store) once half the messages are published.
	ServerRestart bool
}

// withDefaults checks c and sets its defaults.
func (c *Config) withDefaults() error {
	if err := c.checkLimits(); err != nil {
		return err
	}
	if c.Broker != RabbitMQ && c.Broker != NATS {
		return fmt.Errorf("%w: broker %q (want %s or %s)", ErrConfig, c.Broker, RabbitMQ, NATS)
	}
	if c.URL == "" && !(c.Broker == NATS && c.Faults.ServerRestart) {
		return fmt.Errorf("%w: no %s URL", ErrConfig, c.Broker)
	}
	if c.Faults.ServerRestart && c.Broker != NATS {
		return fmt.Errorf("%w: a server restart needs the nats broker (a private server)", ErrConfig)
	}
	if c.Processes && c.WorkerCommand == nil {
		return fmt.Errorf("%w: worker processes need a WorkerCommand", ErrConfig)
	}
	if c.Sink == "" {
		c.Sink = workload.SinkFenced
	}
	if c.Sink != workload.SinkFenced && c.Sink != workload.SinkPlain {
		return fmt.Errorf("%w: sink %q (want fenced or plain)", ErrConfig, c.Sink)
	}
	if c.Recovery && c.Sink != workload.SinkFenced && !c.BrokerOnly {
		return fmt.Errorf("%w: recovery needs the fenced sink", ErrConfig)
	}
	if err := c.batchDefaults(); err != nil {
		return err
	}
	setDefault(&c.Messages, 100)
	if c.DuplicateRate == 0 {
		c.DuplicateRate = 0.2
	}
	c.DuplicateRate = max(c.DuplicateRate, 0)
	setDefault(&c.Consumers, 4)
	if c.Batch > 1 {
		setDefault(&c.Prefetch, c.Batch)
	}
	if c.Faults.Pause > 0 || c.Faults.Overlap > 0 {
		setDefault(&c.Prefetch, 1)
	}
	setDefault(&c.Prefetch, 2)
	setDefault(&c.Latency, 2*time.Millisecond)
	setDefault(&c.LeaseTTL, 500*time.Millisecond)
	setDefault(&c.AckWait, time.Second)
	setDefault(&c.RequeueDelay, 100*time.Millisecond)
	setDefault(&c.Timeout, 60*time.Second)
	setDefault(&c.Faults.PauseFor, 3*max(c.LeaseTTL, c.AckWait))
	if c.Batch > 1 {
		if c.Prefetch < c.Batch {
			return fmt.Errorf("%w: prefetch %d is below the batch of %d", ErrConfig, c.Prefetch, c.Batch)
		}
		if work := time.Duration(c.Batch) * c.Latency; 2*work >= c.LeaseTTL {
			return fmt.Errorf("%w: a batch of %d handlers of %s (%s) does not fit in half the lease of %s",
				ErrConfig, c.Batch, c.Latency, work, c.LeaseTTL)
		}
	}
	f := c.Faults
	if !c.Processes && f.Restarts > c.Consumers {
		return fmt.Errorf("%w: %d restarts of %d in-process consumers: each restarts once (worker processes up to %d)",
			ErrConfig, f.Restarts, c.Consumers, MaxRestarts)
	}
	if c.Poison+f.CrashBeforeAck+f.Pause+f.Overlap > c.Messages {
		return fmt.Errorf("%w: %d poison messages, %d crashes, %d pauses and %d overlaps need as many distinct messages, have %d",
			ErrConfig, c.Poison, f.CrashBeforeAck, f.Pause, f.Overlap, c.Messages)
	}
	return nil
}

// batchDefaults checks that a batch run has the engine and sets the
// linger's default (checkLimits checked the ranges).
func (c *Config) batchDefaults() error {
	if c.Batch > 1 && c.BrokerOnly {
		return fmt.Errorf("%w: a batch claim needs the engine (not broker-only)", ErrConfig)
	}
	setDefault(&c.BatchLinger, 20*time.Millisecond)
	return nil
}

func setDefault[T int | time.Duration](p *T, d T) {
	if *p <= 0 {
		*p = d
	}
}

// brokerErr is the error of a broker that could not be opened: ctx's own
// error when the run was cancelled meanwhile (an interrupt while dialling
// is an interrupt, not an unavailable broker), else err wrapped in
// ErrBroker.
func brokerErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return fmt.Errorf("%w: %v", ErrBroker, err)
}
