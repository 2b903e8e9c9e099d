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
	return c.msgs.ConsumeBatch(ctx, ds)
}
