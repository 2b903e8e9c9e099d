package idemnats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/idem"
)

// DefaultRequeueDelay is the NakWithDelay delay of RedeliverLater when
// Options.RequeueDelay is zero.
const DefaultRequeueDelay = 200 * time.Millisecond

// ReasonHeader is the header PublishTo sets on a dead-lettered message: the
// error that dead-lettered it.
const ReasonHeader = "Idem-Dead-Letter-Reason"

// Handler processes one message under its key's lease: it applies the
// message's side effect. Its ctx carries the lease (idem.LeaseFrom) and is
// cancelled if the lease is lost. An error marked with idem.Permanent is a
// poison message (dead-lettered); any other error naks the message.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// KeyFunc returns the idempotency key of a message. An error makes the
// message invalid: it is dead-lettered.
type KeyFunc func(msg jetstream.Msg) (string, error)

// DeadLetterFunc keeps a message that is taken out of circulation, before
// it is terminated; key is its idempotency key ("" when it has none) and
// cause why it is dead. An error naks the message with the requeue delay
// instead of terminating it.
type DeadLetterFunc func(ctx context.Context, msg jetstream.Msg, key string, cause error) error

// Options configures a Consumer. The zero value is ready to use.
type Options struct {
	// Key returns a message's idempotency key; nil means
	// HeaderKey(jetstream.MsgIDHeader).
	Key KeyFunc
	// Fingerprint returns the fingerprint of a message's request; nil means
	// idem.NewFingerprint of the payload.
	Fingerprint func(msg jetstream.Msg) idem.Fingerprint
	// RequeueDelay is the delay of RedeliverLater; zero means
	// DefaultRequeueDelay.
	RequeueDelay time.Duration
	// InProgressInterval is how often InProgress is sent while the engine
	// processes a message; zero sends none. Set it well below the
	// consumer's AckWait (a third, say) for handlers that can outlast it.
	InProgressInterval time.Duration
	// ConfirmAck acknowledges with DoubleAck, which waits for the server
	// to confirm, instead of Ack.
	ConfirmAck bool
	// DeadLetter keeps dead messages before they are terminated; nil only
	// terminates them (the server's MSG_TERMINATED advisory remains).
	DeadLetter DeadLetterFunc
}

// Consumer processes JetStream messages through an idem.Engine. It is safe
// for concurrent use.
type Consumer struct {
	msgs idem.MessageConsumer[jetstream.Msg]
	opts Options
}

// New returns a Consumer that runs fn under engine. It panics if engine or
// fn is nil.
func New(engine *idem.Engine, fn Handler, opts Options) *Consumer {
	if opts.Key == nil {
		opts.Key = HeaderKey(jetstream.MsgIDHeader)
	}
	if opts.Fingerprint == nil {
		opts.Fingerprint = func(msg jetstream.Msg) idem.Fingerprint { return idem.NewFingerprint(msg.Data()) }
	}
	if opts.RequeueDelay <= 0 {
		opts.RequeueDelay = DefaultRequeueDelay
	}
	return &Consumer{msgs: idem.NewMessageConsumer("idemnats", engine, fn, opts.Key, opts.Fingerprint), opts: opts}
}

// HeaderKey returns a KeyFunc that reads the header name; a missing or
// empty header is an error wrapping idem.ErrInvalidKey.
func HeaderKey(name string) KeyFunc {
	return func(msg jetstream.Msg) (string, error) {
		if v := msg.Headers().Get(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%w: header %q missing or empty", idem.ErrInvalidKey, name)
	}
}

// Handle processes msg (Process) and settles it (Settle). It returns the
// decision carried out and the handler's or the engine's error, joined with the
// settle error if acknowledging failed.
func (c *Consumer) Handle(ctx context.Context, msg jetstream.Msg) (idem.Decision, error) {
	a, err := c.Process(ctx, msg)
	if serr := c.Settle(ctx, msg, a, err); serr != nil {
		return a, errors.Join(err, serr)
	}
	return a, err
}

// Process runs msg through Engine.Consume and returns what to do with it,
// without acknowledging anything: a caller that must not settle (a
// consumer that is going down) drops msg, and the server redelivers it
// after AckWait. It sends InProgress meanwhile (Options.InProgressInterval).
func (c *Consumer) Process(ctx context.Context, msg jetstream.Msg) (idem.Decision, error) {
	stop := c.keepAlive(msg)
	defer stop()
	return c.msgs.Consume(ctx, msg)
}

// keepAlive sends InProgress for msg until the returned function is called.
func (c *Consumer) keepAlive(msg jetstream.Msg) (stop func()) {
	return c.keepAliveAll([]jetstream.Msg{msg})
}

// Settle carries out decision a on msg: Ack (DoubleAck with ConfirmAck)
// for idem.Ack, Nak for idem.Redeliver, NakWithDelay(Options.RequeueDelay)
// for idem.RedeliverLater, Options.DeadLetter then Term for
// idem.DeadLetter. cause is the error Process returned: it is passed to
// Options.DeadLetter. When DeadLetter fails, msg is naked with the requeue
// delay and the error is returned. Any other value is an error and settles
// nothing.
func (c *Consumer) Settle(ctx context.Context, msg jetstream.Msg, a idem.Decision, cause error) error {
	var err error
	switch a {
	case idem.Ack:
		if c.opts.ConfirmAck {
			err = msg.DoubleAck(ctx)
		} else {
			err = msg.Ack()
		}
	case idem.Redeliver:
		err = msg.Nak()
	case idem.RedeliverLater:
		err = msg.NakWithDelay(c.opts.RequeueDelay)
	case idem.DeadLetter:
		err = c.deadLetter(ctx, msg, cause)
	default:
		return fmt.Errorf("idemnats: unknown decision %d", uint8(a))
	}
	if err != nil {
		return fmt.Errorf("idemnats: %s %s: %w", a, msg.Subject(), err)
	}
	return nil
}

func (c *Consumer) deadLetter(ctx context.Context, msg jetstream.Msg, cause error) error {
	if c.opts.DeadLetter != nil {
		key, _ := c.opts.Key(msg)
		if err := c.opts.DeadLetter(ctx, msg, key, cause); err != nil {
			return errors.Join(fmt.Errorf("dead letter: %w", err), msg.NakWithDelay(c.opts.RequeueDelay))
		}
	}
	// Plain Term, not TermWithReason: servers before 2.10 do not parse a
	// reason and leave the message unacknowledged.
	return msg.Term()
}

// PublishTo returns a DeadLetterFunc that publishes a copy of the message
// (payload and headers, plus ReasonHeader) to subject through js, which
// must be captured by a stream (a dead-letter stream). The copy carries
// Nats-Msg-Id "dlq:<key>" when the key is known, so that the dead-letter
// stream drops a second copy of the same message within its duplicate
// window.
func PublishTo(js jetstream.JetStream, subject string) DeadLetterFunc {
	return func(ctx context.Context, msg jetstream.Msg, key string, cause error) error {
		out := nats.NewMsg(subject)
		out.Data = msg.Data()
		for k, vs := range msg.Headers() {
			for _, v := range vs {
				out.Header.Add(k, v)
			}
		}
		out.Header.Del(jetstream.MsgIDHeader)
		if cause != nil {
			out.Header.Set(ReasonHeader, cause.Error())
		}
		var opts []jetstream.PublishOpt
		if key != "" {
			opts = append(opts, jetstream.WithMsgID("dlq:"+key))
		}
		_, err := js.PublishMsg(ctx, out, opts...)
		return err
	}
}
