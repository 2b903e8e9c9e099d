package idem

import "context"

// MessageConsumer is the broker-neutral part of a broker adapter's
// consumer (idemamqp, idemnats) for messages of type M: it finds a
// message's idempotency key and fingerprint and runs its handler through
// Consume or ConsumeBatch; the adapter carries out the decisions with its
// broker. It is safe for concurrent use (it keeps no state of its own).
type MessageConsumer[M any] struct {
	engine      *Engine
	handler     func(ctx context.Context, m M) error
	key         func(m M) (string, error)
	fingerprint func(m M) Fingerprint
}

// NewMessageConsumer returns a MessageConsumer that runs handler under
// engine, with key and fingerprint telling a message's idempotency key and
// fingerprint (an error of key makes the message invalid: it is
// dead-lettered). It panics, naming adapter, if engine or handler is nil;
// key and fingerprint must not be nil.
func NewMessageConsumer[M any](adapter string, engine *Engine, handler func(ctx context.Context, m M) error,
	key func(m M) (string, error), fingerprint func(m M) Fingerprint) MessageConsumer[M] {
	if engine == nil || handler == nil {
		panic(adapter + ": New with nil engine or handler")
	}
	return MessageConsumer[M]{engine: engine, handler: handler, key: key, fingerprint: fingerprint}
}

// Consume runs m through Engine.Consume and returns what to do with it. A
// message whose key function fails is DeadLetter with that error.
func (c MessageConsumer[M]) Consume(ctx context.Context, m M) (Decision, error) {
	key, err := c.key(m)
	if err != nil {
		return DeadLetter, err
	}
	return c.engine.Consume(ctx, key, c.fingerprint(m), func(ctx context.Context) error {
		return c.handler(ctx, m)
	})
}

// ConsumeBatch runs ms through Engine.ConsumeBatch and returns one entry
// per message, in order. A message whose key function fails is DeadLetter
// with that error and takes no part in the claim. An empty batch, or one
// without a valid key, does not reach the engine.
func (c MessageConsumer[M]) ConsumeBatch(ctx context.Context, ms []M) []Consumed {
	out := make([]Consumed, len(ms))
	batch := make([]Message, 0, len(ms))
	idx := make([]int, 0, len(ms))
	for i, m := range ms {
		key, err := c.key(m)
		if err != nil {
			out[i] = Consumed{Decision: DeadLetter, Err: err}
			continue
		}
		batch = append(batch, Message{Key: key, Fingerprint: c.fingerprint(m),
			Fn: func(ctx context.Context) error { return c.handler(ctx, m) }})
		idx = append(idx, i)
	}
	if len(batch) == 0 {
		return out
	}
	for j, r := range c.engine.ConsumeBatch(ctx, batch) {
		out[idx[j]] = r
	}
	return out
}
