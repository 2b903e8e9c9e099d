package idemamqp

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/idem"
)

// DefaultRequeueDelay is how long Settle waits before requeuing a message
// whose key another consumer holds, when Options.RequeueDelay is zero.
const DefaultRequeueDelay = 200 * time.Millisecond

// Handler processes one delivery under its key's lease: it applies the
// message's side effect. Its ctx carries the lease (idem.LeaseFrom) and is
// cancelled if the lease is lost. An error marked with idem.Permanent is a
// poison message (dead-lettered); any other error requeues the message.
type Handler func(ctx context.Context, d *amqp.Delivery) error

// KeyFunc returns the idempotency key of a delivery. An error makes the
// message invalid: it is dead-lettered.
type KeyFunc func(d *amqp.Delivery) (string, error)

// Options configures a Consumer. The zero value is ready to use.
type Options struct {
	// Key returns a delivery's idempotency key; nil means MessageID.
	Key KeyFunc
	// Fingerprint returns the fingerprint of a delivery's request; nil
	// means idem.NewFingerprint of the body.
	Fingerprint func(d *amqp.Delivery) idem.Fingerprint
	// RequeueDelay is how long RedeliverLater waits; zero means
	// DefaultRequeueDelay.
	RequeueDelay time.Duration
}

// Consumer processes deliveries through an idem.Engine. It is safe for
// concurrent use (it keeps no state of its own).
type Consumer struct {
	msgs idem.MessageConsumer[*amqp.Delivery]
	opts Options
}

// New returns a Consumer that runs fn under engine. It panics if engine or
// fn is nil.
func New(engine *idem.Engine, fn Handler, opts Options) *Consumer {
	if opts.Key == nil {
		opts.Key = MessageID
	}
	if opts.Fingerprint == nil {
		opts.Fingerprint = func(d *amqp.Delivery) idem.Fingerprint { return idem.NewFingerprint(d.Body) }
	}
	if opts.RequeueDelay <= 0 {
		opts.RequeueDelay = DefaultRequeueDelay
	}
	return &Consumer{msgs: idem.NewMessageConsumer("idemamqp", engine, fn, opts.Key, opts.Fingerprint), opts: opts}
}

// MessageID is the default KeyFunc: the delivery's message-id property. An
// empty message-id is an error wrapping idem.ErrInvalidKey.
func MessageID(d *amqp.Delivery) (string, error) {
	if d.MessageId == "" {
		return "", fmt.Errorf("%w: message has no message-id", idem.ErrInvalidKey)
	}
	return d.MessageId, nil
}

// HeaderKey returns a KeyFunc that reads the header name, which must hold
// a non-empty string (or byte slice); anything else is an error wrapping
// idem.ErrInvalidKey.
func HeaderKey(name string) KeyFunc {
	return func(d *amqp.Delivery) (string, error) {
		switch v := d.Headers[name].(type) {
		case string:
			if v != "" {
				return v, nil
			}
		case []byte:
			if len(v) > 0 {
				return string(v), nil
			}
		}
		return "", fmt.Errorf("%w: header %q missing, empty or not a string", idem.ErrInvalidKey, name)
	}
}

// Handle processes d (Process) and settles it (Settle). It returns the
// decision carried out and the handler's or the engine's error, joined with the
// settle error if acknowledging failed.
func (c *Consumer) Handle(ctx context.Context, d *amqp.Delivery) (idem.Decision, error) {
	a, err := c.Process(ctx, d)
	if serr := c.Settle(ctx, d, a); serr != nil {
		return a, errors.Join(err, serr)
	}
	return a, err
}

// Process runs d through Engine.Consume and returns what to do with it,
// without acknowledging anything: a caller that must not settle (a
// consumer that is going down) simply drops d, and the broker redelivers
// it once the channel closes. The error is the handler's or the engine's
// (an invalid key wraps idem.ErrInvalidKey).
func (c *Consumer) Process(ctx context.Context, d *amqp.Delivery) (idem.Decision, error) {
	return c.msgs.Consume(ctx, d)
}

// Settle carries out decision a on d: Ack(false) for idem.Ack, Nack(false,
// true) for idem.Redeliver, Nack(false, true) after Options.RequeueDelay for
// idem.RedeliverLater, Reject(false) for idem.DeadLetter. A ctx that ends
// during the delay requeues at once. Any other value is an error and
// settles nothing.
func (c *Consumer) Settle(ctx context.Context, d *amqp.Delivery, a idem.Decision) error {
	var err error
	switch a {
	case idem.Ack:
		err = d.Ack(false)
	case idem.Redeliver:
		err = d.Nack(false, true)
	case idem.RedeliverLater:
		t := time.NewTimer(c.opts.RequeueDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		err = d.Nack(false, true)
	case idem.DeadLetter:
		err = d.Reject(false)
	default:
		return fmt.Errorf("idemamqp: unknown decision %d", uint8(a))
	}
	if err != nil {
		return fmt.Errorf("idemamqp: %s delivery %d: %w", a, d.DeliveryTag, err)
	}
	return nil
}
