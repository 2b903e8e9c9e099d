package matrix

import (
	"context"
	"fmt"
	"strings"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
)

// The broker rows: consumers on a real broker (package consume), whose
// backend column names the broker. The idempotency store is the engine's
// on memory; the effect sink is the consumer's ledger.
const (
	RabbitMQ harness.Backend = "rabbitmq"
	NATS     harness.Backend = "nats"
)

// The configurations only a consumer has.
const (
	// BrokerOnly consumes with no idempotency check: it trusts the
	// broker's delivery guarantee.
	BrokerOnly Config = "broker only (no check)"
	// NaiveStore is the reference consumer (fenced sink + recovery) on
	// the known-bad store cache-on-success (backends/naive).
	NaiveStore Config = "naive store + recovery"
)

// CrashBeforeAck kills a consumer after a message's effect and before its
// ack: the broker redelivers the message to another consumer.
const CrashBeforeAck Fault = "crash before ack"

// BatchProcesses is the variant of a consumer cell whose worker processes
// pull batches of up to 8 messages and claim each with one
// Engine.ConsumeBatch (consume.Config.Batch); the aimed SIGKILL strikes
// inside the batch, before its outcomes reach the store.
const BatchProcesses = "batch claims, processes"

// naiveConsumerStore is the naive design of the NaiveStore row.
const naiveConsumerStore = "cache-on-success"

// How each broker fault is injected.
const (
	howAckCrash     = "consumer drops its delivery unacked and closes its channel, aimed after the effect (2 messages, no publisher duplicates)"
	howAckKill      = "SIGKILL of a consumer worker process aimed after the effect, before the ack (2 messages, 3 workers)"
	howAckKillBatch = "SIGKILL of a consumer worker process inside a batch of up to 8, aimed after an effect, before the batch's outcomes and acks (2 messages, 3 workers)"
)

// howPublisherDup is how the publisher-duplicates cells are injected.
var howPublisherDup = fmt.Sprintf("publisher duplicates (30%% of messages published twice, 0 to 8 apart; the first copies of %d more are held after their claim until the other copy was claimed)", dupOverlaps)

// dupOverlaps is how many messages of a publisher-duplicates cell have
// their duplicate aimed at the first copy in flight, so that a store that
// writes nothing before the effect is caught on every seed, not only when
// two copies happen to overlap.
const dupOverlaps = 3

// isBroker reports whether b names a broker (a consumer cell).
func isBroker(b harness.Backend) bool { return b == RabbitMQ || b == NATS }

// brokerRows adds the consumer cells of the wanted brokers: every
// configuration under an aimed crash before the ack (in process and, in
// the full matrix, with worker processes killed by SIGKILL, also inside a
// batch claim) and under publisher duplicates. The quick matrix runs two in-process crash cells
// on RabbitMQ (about a second each): the reference engine, which must
// pass, and the broker alone, which must be caught.
func (l *cellList) brokerRows(quick bool) {
	if quick {
		l.add(Cell{Config: Recovery, Backend: RabbitMQ, Fault: CrashBeforeAck, How: howAckCrash})
		l.add(Cell{Config: BrokerOnly, Backend: RabbitMQ, Fault: CrashBeforeAck, How: howAckCrash})
		return
	}
	for _, b := range []harness.Backend{RabbitMQ, NATS} {
		for _, cfg := range []Config{Plain, Fenced, Recovery, BrokerOnly, NaiveStore} {
			l.add(Cell{Config: cfg, Backend: b, Fault: CrashBeforeAck, How: howAckCrash})
			l.add(Cell{Config: cfg, Backend: b, Fault: CrashBeforeAck, Variant: Processes, How: howAckKill})
			l.add(Cell{Config: cfg, Backend: b, Fault: Dup, How: howPublisherDup})
		}
		for _, cfg := range []Config{Fenced, Recovery} {
			l.add(Cell{Config: cfg, Backend: b, Fault: CrashBeforeAck, Variant: BatchProcesses, How: howAckKillBatch})
		}
	}
}

// consumeConfig is the consumer run of broker cell c, with the flags of
// `idembench consume` that replay it.
func (o *Options) consumeConfig(ctx context.Context, c *Cell) (consume.Config, []string, func(), error) {
	cfg := consume.Config{Broker: string(c.Backend), Messages: 30, Seed: o.Seed}
	flags := []string{"--broker", string(c.Backend), "--seed", fmt.Sprint(o.Seed), "--messages", "30"}
	cfg.URL = o.AMQPURL
	if c.Backend == NATS {
		cfg.URL = o.NATSURL
	}
	if cfg.URL == "" {
		return cfg, nil, func() {}, fmt.Errorf("no %s URL (Options.AMQPURL / NATSURL)", c.Backend)
	}
	flags = append(flags, "--url", cfg.URL)
	switch c.Fault {
	case CrashBeforeAck:
		cfg.Faults.CrashBeforeAck, cfg.DuplicateRate = 2, -1
		flags = append(flags, "--crash-before-ack", "2", "--duplicate-rate", "0")
	case Dup:
		cfg.DuplicateRate, cfg.Faults.Overlap = 0.3, dupOverlaps
		flags = append(flags, "--crash-before-ack", "0", "--duplicate-rate", "0.3", "--overlap", fmt.Sprint(dupOverlaps))
	default:
		return cfg, nil, func() {}, fmt.Errorf("no consumer run for fault %q", c.Fault)
	}
	if c.Variant == BatchProcesses {
		cfg.Batch = 8
		flags = append(flags, "--batch", "8")
	}
	if c.Variant == Processes || c.Variant == BatchProcesses {
		if o.ConsumeWorker == nil {
			return cfg, nil, func() {}, fmt.Errorf("worker processes need Options.ConsumeWorker")
		}
		cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, o.ConsumeWorker, 3
		flags = append(flags, "--processes", "--consumers", "3")
	}
	closeStore := func() {}
	switch c.Config {
	case BrokerOnly:
		cfg.BrokerOnly = true
		return cfg, append(flags, "--broker-only"), closeStore, nil
	case NaiveStore:
		st, err := naive.New(naiveConsumerStore, nil)
		if err != nil {
			return cfg, nil, closeStore, err
		}
		cfg.Store, cfg.StoreName, cfg.Recovery = st, harnessNaive+naiveConsumerStore, true
		return cfg, append(flags, "--engine", harnessNaive+naiveConsumerStore, "--backend", "memory"), closeStore, nil
	case Plain, Fenced, Recovery:
	default:
		return cfg, nil, closeStore, fmt.Errorf("no consumer run for configuration %q", c.Config)
	}
	sink, noRecovery := c.Config.sink()
	cfg.Sink, cfg.Recovery = sink, !noRecovery
	flags = append(flags, "--sink", sink)
	if noRecovery {
		flags = append(flags, "--no-recovery")
	}
	if o.Engine.Open != nil {
		st, closer, err := o.Engine.Open(ctx, harness.Env{Backend: harness.Memory, Warn: func(string) {}})
		if err != nil {
			return cfg, nil, closeStore, err
		}
		if closer != nil {
			closeStore = func() { _ = closer.Close() }
		}
		cfg.Store, cfg.StoreName = st, o.Engine.Name+"/memory"
		flags = append(flags, "--engine", o.Engine.Name)
	}
	return cfg, flags, closeStore, nil
}

// harnessNaive is the prefix of the naive engines' names
// (harness/engines.NaivePrefix).
const harnessNaive = "naive/"

// runBrokerCell runs broker cell c as a consumer run and fills in what it
// observed.
func (o *Options) runBrokerCell(ctx context.Context, c *Cell) {
	c.Seed = o.Seed
	cfg, flags, closeStore, err := o.consumeConfig(ctx, c)
	defer closeStore()
	if err != nil {
		c.Observed, c.Note = Error, err.Error()
		return
	}
	res, err := consume.Run(ctx, cfg)
	switch {
	case ctx.Err() != nil:
		c.Observed, c.Note = NotRun, "interrupted"
		return
	case err != nil:
		c.Observed, c.Note = Error, err.Error()
		return
	}
	c.Replay = "idembench consume " + strings.Join(flags, " ")
	for _, op := range res.History.Ops {
		switch {
		case op.Kind == history.KindFault:
			c.Faults++
		case op.Kind == history.KindCall && op.Outcome == history.Unknown:
			c.Unknown++
		}
	}
	c.judge(res.Report, "no two copies of a message reached two consumers at once this run")
	if c.Fault == CrashBeforeAck && res.Stats.Crashes != cfg.Faults.CrashBeforeAck {
		// The aimed crash did not strike: the cell says nothing.
		c.Observed, c.Match = Error, false
		c.Note = fmt.Sprintf("%d of %d aimed crashes struck", res.Stats.Crashes, cfg.Faults.CrashBeforeAck)
	}
}
