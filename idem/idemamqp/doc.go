// Package idemamqp runs RabbitMQ (AMQP 0-9-1) deliveries through
// idem.Engine.Consume and settles them with the client's acknowledgement
// calls (github.com/rabbitmq/amqp091-go), so that a message the broker
// delivers more than once has its side effect applied at most once.
//
// The message's idempotency key is its message-id property by default
// (Options.Key picks another field, for example a header with HeaderKey);
// the fingerprint is the SHA-256 of the body (Options.Fingerprint).
//
// Process returns the idem.Decision of Engine.Consume, and Settle carries
// it out:
//
//	idem.Decision    when                                    AMQP call
//	Ack              done now, or a duplicate                Ack(false)
//	Redeliver        retryable error, lost lease, store      Nack(false, true)
//	                 failure
//	RedeliverLater   key in progress elsewhere               Nack(false, true) after
//	                                                         Options.RequeueDelay
//	DeadLetter       handler failed permanently; invalid or  Reject(false)
//	                 missing key; key reused with another
//	                 payload
//
// A rejected message goes to the queue's dead-letter exchange (the queue
// argument x-dead-letter-exchange), or is dropped when the queue has none.
// A poison message (one whose handler fails permanently) is dead-lettered
// once: the failure is stored under its key, so a duplicate of it finds
// the stored failure and is acked, never dead-lettered a second time and
// never run again.
//
// AMQP has no delayed requeue: RedeliverLater waits in Settle, which holds
// up the channel's other deliveries when prefetch is 1. A message that a
// crashed consumer left unacknowledged is redelivered by RabbitMQ when the
// consumer's channel or connection closes; its key's lease is then still
// held until it expires, so the redelivery is requeued until the lease
// expires and the next one takes it over (see idem.WithRecovery for
// finding out whether the crashed consumer's effect happened).
package idemamqp
