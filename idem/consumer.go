package idem

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// Decision tells a message broker what to do with a delivered message. It
// is the one answer of Consume and ConsumeBatch, and of the broker adapters
// (idemamqp, idemnats), which carry it out; it is independent of any broker
// library. The zero value is no decision (the message was not processed).
type Decision uint8

// The decisions, with the call each broker adapter makes for it.
const (
	// Ack removes the message: it was processed now, or by an earlier
	// delivery (a duplicate, including one of a stored permanent failure).
	// AMQP: Ack(false). NATS JetStream: Ack, or DoubleAck with
	// idemnats.Options.ConfirmAck.
	Ack Decision = iota + 1
	// Redeliver hands the message back to be delivered again at once:
	// processing failed with a retryable error and the key was released,
	// or the outcome could not be recorded (store failure, lost lease,
	// cancelled context). A redelivery runs the function again or finds
	// the stored outcome. AMQP: Nack(false, true). NATS: Nak.
	Redeliver
	// RedeliverLater hands the message back to be delivered again after a
	// delay: another consumer is processing the same key right now, and
	// redelivering at once would only meet the same lease. AMQP: Nack(false,
	// true) after idemamqp.Options.RequeueDelay (AMQP has no delayed
	// requeue: Settle waits). NATS: NakWithDelay(idemnats.Options.RequeueDelay).
	RedeliverLater
	// DeadLetter takes the message out of circulation for good: the
	// function failed permanently (the failure is stored, so a duplicate
	// is acked), or the message can never be processed under its key (the
	// key is missing or invalid, or was first used with a different
	// fingerprint). AMQP: Reject(false), which routes it to the queue's
	// dead-letter exchange. NATS: idemnats.Options.DeadLetter, then Term.
	DeadLetter
)

// String returns "ack", "redeliver", "redeliver-later", "dead-letter" or
// "decision(N)".
func (d Decision) String() string {
	switch d {
	case Ack:
		return "ack"
	case Redeliver:
		return "redeliver"
	case RedeliverLater:
		return "redeliver-later"
	case DeadLetter:
		return "dead-letter"
	}
	return fmt.Sprintf("decision(%d)", uint8(d))
}

// Consume processes one delivered message at most once per key, through Do,
// and says what to do with the message:
//
//	fn succeeds                                → Ack, nil
//	duplicate of a completed or failed message → Ack, nil (fn does not run)
//	fn fails permanently (the engine's          → DeadLetter, fn's error; the
//	classifier, by default Permanent)             failure is stored, duplicates
//	                                              are acked
//	fn fails retryably                         → Redeliver, fn's error; key
//	                                             released
//	fn's error satisfies Ambiguous             → DeadLetter, ErrUncertain
//	(store implements UncertainStore, no         wrapping fn's error; the key
//	recovery hook)                               is uncertain until resolved
//	duplicate of an uncertain message          → DeadLetter, ErrUncertain
//	fn's error satisfies Ambiguous (otherwise) → Redeliver, fn's error; key
//	                                             kept until its lease expires
//	key held by a live lease elsewhere         → RedeliverLater, ErrInProgress
//	invalid key, or key used with another fp   → DeadLetter, ErrInvalidKey or
//	                                             ErrFingerprintMismatch
//	anything else (store failure, lease lost,  → Redeliver, the error
//	fault hook, cancelled ctx)
//
// With WithConflictWait, a duplicate first waits for the other consumer and
// is then acked. The stored response is Response{Status: 200} for success
// and Response{Status: 500, Body: the error text} for a permanent failure.
// fn's ctx carries the lease (LeaseFrom) and is cancelled if the lease is
// lost. If fn panics the key is released and the panic continues; the broker
// will typically redeliver. fn must not be nil.
func (e *Engine) Consume(ctx context.Context, key string, fp Fingerprint, fn func(ctx context.Context) error) (Decision, error) {
	var c consumption
	res, err := e.Do(ctx, key, fp, c.wrap(fn))
	return c.decide(res, err)
}

// Message is one delivered message of ConsumeBatch.
type Message struct {
	Key         string
	Fingerprint Fingerprint
	Fn          func(ctx context.Context) error
}

// Consumed is ConsumeBatch's answer for one message: what Consume would
// have returned.
type Consumed struct {
	Decision Decision
	Err      error
}

// ConsumeBatch processes a pulled batch of messages as Consume would, one
// after the other in order, through DoBatch: with a BatchStore the keys are
// claimed in one round trip and the outcomes recorded in one more. A
// message whose key appeared earlier in the batch (a duplicate delivery) is
// answered after the earlier one is recorded, so it is typically acked
// without running. DoBatch never waits on a key another consumer holds
// (RedeliverLater).
func (e *Engine) ConsumeBatch(ctx context.Context, msgs []Message) []Consumed {
	cs := make([]consumption, len(msgs))
	items := make([]BatchItem, len(msgs))
	for i, m := range msgs {
		items[i] = BatchItem{Key: m.Key, Fingerprint: m.Fingerprint, Fn: cs[i].wrap(m.Fn)}
	}
	out := make([]Consumed, len(msgs))
	for i, r := range e.DoBatch(ctx, items) {
		out[i].Decision, out[i].Err = cs[i].decide(r.Result, r.Err)
	}
	return out
}

// consumption is the state of one message's Do: whether fn ran and what it
// returned.
type consumption struct {
	ran   bool
	fnErr error
}

// wrap turns a message handler into the Func that Do runs.
func (c *consumption) wrap(fn func(ctx context.Context) error) Func {
	return func(ctx context.Context) (Response, error) {
		c.ran = true
		if c.fnErr = fn(ctx); c.fnErr != nil {
			return Response{Status: 500, Body: []byte(c.fnErr.Error())}, c.fnErr
		}
		return Response{Status: 200}, nil
	}
}

// decide maps Do's answer to a Decision (see Consume).
func (c *consumption) decide(res Result, err error) (Decision, error) {
	switch {
	case err == nil:
		return Ack, nil
	case errors.Is(err, ErrUncertain):
		// Redelivery cannot help until an operator resolves the key.
		return DeadLetter, err
	case c.ran && c.fnErr != nil && sameError(err, c.fnErr):
		// Do returned fn's error alone: the outcome was recorded.
		if res.Failed {
			return DeadLetter, err
		}
		return Redeliver, err
	case errors.Is(err, ErrInvalidKey), errors.Is(err, ErrFingerprintMismatch):
		return DeadLetter, err
	case errors.Is(err, ErrInProgress):
		return RedeliverLater, err
	}
	return Redeliver, err
}

// sameError reports whether err is target itself rather than an error that
// wraps or joins it. Do never creates errors of the caller's types, so for
// an error type that cannot be compared, equal types mean the same error.
func sameError(err, target error) bool {
	t := reflect.TypeOf(err)
	if t != reflect.TypeOf(target) {
		return false
	}
	return !t.Comparable() || err == target
}
