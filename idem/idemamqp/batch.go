package idemamqp

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/idem"
)

// ProcessBatch runs a pulled batch of deliveries (a consumer with prefetch
// N collects up to N) through idem.Engine.ConsumeBatch: with a store that
// implements idem.BatchStore their keys are claimed in one round trip and
// their outcomes recorded in one more, instead of two per delivery. It
// returns one entry per delivery, in order, and acknowledges nothing:
// settle each with Settle, or drop them all (a consumer going down) and
// the broker redelivers them once the channel closes.
//
// Per delivery the answer is Process's, with two differences that come
// from ConsumeBatch: a key another consumer holds is answered idem.RedeliverLater
// at once (no conflict wait), and a delivery whose key appeared earlier in
// the batch is answered after the earlier one is recorded (typically Ack,
// its handler not run). A delivery without a valid key is idem.DeadLetter and
// takes no part in the claim. The handlers run one after the other; keep
// the batch short next to the engine's lease TTL. An empty batch returns
// an empty slice.
func (c *Consumer) ProcessBatch(ctx context.Context, ds []*amqp.Delivery) []idem.Consumed {
	out := make([]idem.Consumed, len(ds))
	msgs := make([]idem.Message, 0, len(ds))
	idx := make([]int, 0, len(ds))
	for i, d := range ds {
		key, err := c.opts.Key(d)
		if err != nil {
			out[i] = idem.Consumed{Decision: idem.DeadLetter, Err: err}
			continue
		}
		msgs = append(msgs, idem.Message{Key: key, Fingerprint: c.opts.Fingerprint(d),
			Fn: func(ctx context.Context) error { return c.fn(ctx, d) }})
		idx = append(idx, i)
	}
	if len(msgs) == 0 {
		return out
	}
	for j, r := range c.engine.ConsumeBatch(ctx, msgs) {
		out[idx[j]] = r
	}
	return out
}
