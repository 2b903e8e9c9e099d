package consume

import (
	"context"
	"errors"
	"time"

	"github.com/idembench/idembench/idem"
)

// abandoned is the decision of a delivery its consumer crashed holding: it
// was not settled, and the broker will deliver it again.
const abandoned idem.Decision = 0

// errSubClosed is returned by next once the subscription is closed.
var errSubClosed = errors.New("consume: subscription closed")

// broker is one run's queues or streams on one broker.
type broker interface {
	// publish sends one copy of a message; an error may hide a publish
	// that happened (the caller retries, which may duplicate it).
	publish(ctx context.Context, key string, body []byte) error
	// subscribe starts a new consumer: with engine != nil deliveries go
	// through the broker's adapter (idemamqp or idemnats) on engine,
	// else they are settled directly. fn is the business handler.
	subscribe(ctx context.Context, engine *idem.Engine, fn handler) (subscription, error)
	// drained reports whether no message is ready or unacknowledged.
	drained(ctx context.Context) (bool, error)
	// deadLettered counts the messages in the dead-letter queue or stream.
	deadLettered(ctx context.Context) (int, error)
	// restartServer restarts a private server; an error when there is none.
	restartServer(ctx context.Context) error
	// lost returns an error naming the connection that died once one of
	// the run's connections to the broker died unplanned (a RabbitMQ
	// connection closed by the server or the network; a NATS connection
	// disconnected for natsLostAfter outside a planned server restart),
	// and nil until then.
	lost() error
	// url is the broker's URL for worker processes (a private server's).
	url() string
	// resources names what the run created (queues, streams), for reports
	// and leak checks.
	resources() []string
	// close deletes every queue and stream the run created, stops a
	// private server and closes the connections. It is idempotent.
	close(ctx context.Context) error
}

// handler is the business handler: it applies the effect of the message
// whose body it gets.
type handler func(ctx context.Context, body []byte) error

// subscription is one consumer's stream of deliveries.
type subscription interface {
	// next returns the next delivery; errSubClosed after close, ctx.Err()
	// when ctx ends.
	next(ctx context.Context) (delivery, error)
	// nextBatch returns the next pulled batch of at most n deliveries,
	// waiting at most linger for it to fill (RabbitMQ: after the first
	// delivery; NATS: one Fetch). An empty batch with a nil error means
	// nothing came; errSubClosed after close.
	nextBatch(ctx context.Context, n int, linger time.Duration) ([]delivery, error)
	// processBatch runs ds (from nextBatch) through the adapter's
	// ProcessBatch, one decision and error per delivery, in order.
	processBatch(ctx context.Context, ds []delivery) []idem.Consumed
	// close stops the consumer without settling what it holds: the broker
	// redelivers it (RabbitMQ at once, NATS after AckWait).
	close()
}

// delivery is one delivered message.
type delivery interface {
	key() string
	body() []byte
	redelivered() bool
	// attempt numbers the delivery: the broker's delivery count (NATS),
	// 1 or 2 for a first or repeated delivery (RabbitMQ).
	attempt() int
	// process runs the delivery through the adapter (engine runs) or the
	// handler alone (broker-only runs) and says what to do with it.
	process(ctx context.Context) (idem.Decision, error)
	// settle performs a; cause is process's error.
	settle(ctx context.Context, a idem.Decision, cause error) error
}

// directDecision is what a broker-only consumer does after its handler.
func directDecision(err error) idem.Decision {
	switch {
	case err == nil:
		return idem.Ack
	case idem.IsPermanent(err):
		return idem.DeadLetter
	}
	return idem.Redeliver
}
