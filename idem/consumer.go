package idem

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// Decision tells a message broker what to do with a delivered message. It is
// independent of any broker library: map it to your client's ack calls.
type Decision uint8

// The decisions Consume returns.
const (
	// Ack removes the message: it was processed now, or by an earlier
	// delivery, or it failed permanently and the failure is stored.
	Ack Decision = iota + 1
	// Nack hands the message back for redelivery: processing failed with a
	// retryable error and the key was released, or the outcome could not
	// be recorded (store failure, lost lease, cancelled context). A
	// redelivery runs the function again or finds the stored outcome.
	Nack
	// Requeue hands the message back to be delivered again after a delay:
	// another consumer is processing the same key right now. Redelivering
	// at once would only meet the same lease.
	Requeue
	// Reject takes the message out of circulation (a dead-letter queue):
	// it can never be processed under its key, because the key is invalid
	// or was first used by a message with a different fingerprint.
	// Redelivery would fail the same way forever.
	Reject
)

// String returns "ack", "nack", "requeue", "reject" or "decision(N)".
func (d Decision) String() string {
	switch d {
	case Ack:
		return "ack"
	case Nack:
		return "nack"
	case Requeue:
		return "requeue"
	case Reject:
		return "reject"
	}
	return fmt.Sprintf("decision(%d)", uint8(d))
}

// Consume processes one delivered message at most once per key, through Do,
// and says what to do with the message:
//
//	fn succeeds                                → Ack, nil
//	duplicate of a completed or failed message → Ack, nil (fn does not run)
//	fn fails permanently (the engine's          → Ack, fn's error; the failure
//	classifier, by default Permanent)             is stored, duplicates are acked
//	fn fails retryably                         → Nack, fn's error; key released
//	fn's error satisfies Ambiguous             → Nack, fn's error; key kept
//	                                             until its lease expires (Do)
//	key held by a live lease elsewhere         → Requeue, ErrInProgress
//	invalid key, or key used with another fp   → Reject, ErrInvalidKey or
//	                                             ErrFingerprintMismatch
//	anything else (store failure, lease lost,  → Nack, the error
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
// (Requeue).
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
	case c.ran && c.fnErr != nil && sameError(err, c.fnErr):
		// Do returned fn's error alone: the outcome was recorded.
		if res.Failed {
			return Ack, err
		}
		return Nack, err
	case errors.Is(err, ErrInvalidKey), errors.Is(err, ErrFingerprintMismatch):
		return Reject, err
	case errors.Is(err, ErrInProgress):
		return Requeue, err
	}
	return Nack, err
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
