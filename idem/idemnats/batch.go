package idemnats

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/idem"
)

// ProcessBatch runs a pulled batch of messages (one Fetch of N) through
// idem.Engine.ConsumeBatch: with a store that implements idem.BatchStore
// their keys are claimed in one round trip and their outcomes recorded in
// one more, instead of two per message. It returns one entry per message,
// in order, and acknowledges nothing: settle each with Settle, or drop
// them (a consumer going down) and the server redelivers them after
// AckWait. It sends InProgress for every message of the batch meanwhile
// (Options.InProgressInterval), since the last one waits for all the
// handlers before it.
//
// Per message the answer is Process's, with two differences that come from
// ConsumeBatch: a key another consumer holds is answered idem.RedeliverLater at
// once (no conflict wait), and a message whose key appeared earlier in the
// batch is answered after the earlier one is recorded (typically Ack, its
// handler not run). A message without a valid key is idem.DeadLetter and takes
// no part in the claim. The handlers run one after the other; keep the
// batch short next to the engine's lease TTL and the consumer's AckWait.
// An empty batch returns an empty slice.
func (c *Consumer) ProcessBatch(ctx context.Context, msgs []jetstream.Msg) []idem.Consumed {
	stop := c.keepAliveAll(msgs)
	defer stop()
	return c.msgs.ConsumeBatch(ctx, msgs)
}

// keepAliveAll sends InProgress for every message of msgs until the
// returned function is called.
func (c *Consumer) keepAliveAll(msgs []jetstream.Msg) (stop func()) {
	if c.opts.InProgressInterval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(c.opts.InProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress() // a lost one only risks a redelivery
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}
