// Package consume is the harness's consumer mode: it runs message
// consumers on a real broker, RabbitMQ or NATS JetStream, under aimed
// faults, records what happened in a history (package history) and checks
// it with the same checker as `idembench run` (package checker), so a
// consumer configuration gets the same verdicts and exit semantics: ok,
// violation (at most one effect per message id, I1, is the one that
// matters here), inconclusive.
//
// # A run
//
// Run creates a queue with a dead-letter queue (RabbitMQ) or a stream with
// a durable pull consumer and a dead-letter stream (NATS) for the run,
// publishes Config.Messages messages, some of them twice (publisher
// retries, Config.DuplicateRate), and consumes them with Config.Consumers
// consumers until every copy is acked or dead-lettered and the broker holds
// nothing ready or unacknowledged. The publishing is a run of the
// workload driver with a publish as its Target: one publisher client sends
// Config.Messages logical requests (workload.Config.Requests), a delayed
// copy of the DuplicateRate share of them 1 ms later, and retries a publish
// that fails with the driver's jittered backoff; the faults aimed at
// messages (crashes, pauses, overlaps, poison) are drawn by key number and
// named with workload.KeyOf. Each message's id is its idempotency key
// (the message-id property on RabbitMQ, the Idem-Key header on NATS) and
// its payload gives the fingerprint. Consumers run every delivery through
// the broker adapters idem/idemamqp and idem/idemnats on an idem.Engine,
// or, with Config.BrokerOnly, apply the effect and ack with no idempotency
// check at all. The effect goes to a workload sink (fenced or plain) keyed
// by message id with the lease's token; with Config.Recovery the engine's
// recovery hook asks that sink. Once the broker is drained, Run asks the
// store for every message's outcome (liveness probes, checked as I6: no key
// left in progress). What the run created is removed at its end, also when
// ctx is cancelled.
//
// Every input has a documented limit (MaxMessages and the others); Run
// refuses a Config beyond one before it connects to anything, and
// Config.Validate says so without running. Every wait of a
// run, the handlers' Latency included, ends with ctx or Config.Timeout: a
// cancelled run returns within about a second with its history so far,
// unchecked. A broker connection that dies outside the fault plan ends
// the run with ErrBroker naming it, never with a verdict.
//
// # Faults
//
// Faults are aimed, not random: their target messages come from the seed,
// and they strike at the engine's fault points (idem.WithHook).
//
//   - crash before ack: after the effect, at idem.PointAfterFn (right
//     after the effect in a broker-only run), the consumer dies without
//     acking: in-process it drops the delivery and closes its channel or
//     subscription; with worker processes it sends itself SIGKILL. The
//     broker redelivers the message to another consumer (RabbitMQ at once,
//     NATS after AckWait).
//   - pause: before the effect, at idem.PointBeforeFn, the consumer stalls
//     past its lease and the NATS ack wait (with worker processes: SIGSTOP,
//     then SIGCONT). A duplicate of the message, or the NATS redelivery,
//     reaches another consumer meanwhile.
//   - consumer restarts: a consumer closes and a new one takes its place
//     (with worker processes: SIGTERM).
//   - server restart (NATS): the run starts a private nats-server with file
//     storage and restarts it during the publishing.
//
// # Batch claims
//
// With Config.Batch above 1 every consumer pulls up to Batch messages
// (RabbitMQ: prefetch Batch, collected for at most BatchLinger after the
// first; NATS: one Fetch(Batch) that waits at most BatchLinger) and claims
// them with one idem.Engine.ConsumeBatch through the adapters'
// ProcessBatch; each message is still recorded and settled on its own. A
// crash aimed at one message of a batch abandons the whole batch unacked:
// a worker process kills itself in the fault hook, before the batch's
// outcomes reach the store; an in-process consumer skips the batch's later
// messages, but the engine still records the outcomes of those before the
// target. Worker processes claim and finish a batch with one request each
// to the coordinator, which uses the store's idem.BatchStore.
//
// # Worker processes
//
// With Config.Processes every consumer runs in a worker process started
// with Config.WorkerCommand, whose main calls multiproc.ServeWorker with
// Worker. The store, the effect sink, the fault targets and the history stay in the coordinator
// (the process that called Run), which serves the workers over the worker
// protocol of package harness/multiproc (the one `run --workers` uses) on
// their stdin and stdout, so a worker can be killed or stopped at any
// instruction and nothing it did is lost.
//
// # Figures
//
// Result.Stats has the message-level figures: messages per second,
// end-to-end latency from a message's first publish to its effect,
// deliveries and redeliveries, acks, requeues, dead letters and the faults
// that struck. WriteReport writes them with the history and the reports of
// package reports (the per-delivery call latencies) into a directory.
package consume
