// Package idemnats runs NATS JetStream messages through
// idem.Engine.Consume and settles them with the JetStream acknowledgement
// calls (github.com/nats-io/nats.go/jetstream), so that a message the
// server delivers more than once has its side effect applied at most once.
//
// The message's idempotency key is its Nats-Msg-Id header by default
// (Options.Key picks another one with HeaderKey); the fingerprint is the
// SHA-256 of the payload (Options.Fingerprint). Note that JetStream itself
// drops a publish whose Nats-Msg-Id it saw within the stream's duplicate
// window: that covers publisher retries inside the window only, never a
// redelivery to a consumer.
//
// Process returns the idem.Decision of Engine.Consume, and Settle carries
// it out:
//
//	idem.Decision    when                                    JetStream call
//	Ack              done now, or a duplicate                Ack (DoubleAck with
//	                                                         Options.ConfirmAck)
//	Redeliver        retryable error, lost lease, store      Nak
//	                 failure
//	RedeliverLater   key in progress elsewhere               NakWithDelay(
//	                                                         Options.RequeueDelay)
//	DeadLetter       handler failed permanently; invalid or  Options.DeadLetter,
//	                 missing key; key reused with another    Term
//	                 payload
//
// Term stops redelivery for good and makes the server publish a
// MSG_TERMINATED advisory; Options.DeadLetter (for example PublishTo, a
// dead-letter stream) keeps the message itself. A poison message (one
// whose handler fails permanently) is dead-lettered once: the failure is
// stored under its key, so a duplicate finds it and is acked.
//
// While the engine processes a message, Handle and Process send InProgress
// every Options.InProgressInterval, so a handler longer than the consumer's
// AckWait is not redelivered meanwhile. A consumer that dies or stops
// (SIGSTOP) sends nothing: the server redelivers the message after AckWait,
// and the key's lease decides whether the redelivery waits (RedeliverLater)
// or takes over.
package idemnats
