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
// Decisions map to acknowledgements as follows:
//
//	Consume result                       Action        JetStream call
//	Ack, nil (done now, or a duplicate)  Ack           Ack (DoubleAck with
//	                                                   Options.ConfirmAck)
//	Ack, permanent error of the handler  DeadLetter    Options.DeadLetter, Term
//	Nack (retryable error, lost lease,   Requeue       Nak
//	  store failure)
//	Requeue (key in progress elsewhere)  RequeueLater  NakWithDelay(
//	                                                   Options.RequeueDelay)
//	Reject (invalid or missing key,      DeadLetter    Options.DeadLetter, Term
//	  key reused with another payload)
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
// and the key's lease decides whether the redelivery waits (RequeueLater)
// or takes over.
package idemnats
