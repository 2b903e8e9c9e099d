package consume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemamqp"
)

// rabbit is a run's queue and dead-letter queue on RabbitMQ. The queue
// dead-letters to the dead-letter queue through the default exchange.
type rabbit struct {
	cfg        *Config
	owner      bool
	pubConn    *amqp.Connection
	subConn    *amqp.Connection
	pub        *amqp.Channel
	queue, dlq string
	closed     bool
	mu         sync.Mutex
	died       error // the first connection that closed unplanned
}

// newRabbit opens the run's queues: as their owner (the coordinator)
// it declares them and can publish and delete them; otherwise (a worker
// process) it only consumes from them.
func newRabbit(ctx context.Context, cfg *Config, run string, owner bool) (*rabbit, error) {
	r := &rabbit{cfg: cfg, owner: owner, queue: "idembench.consume." + run, dlq: "idembench.consume." + run + ".dlq"}
	var err error
	if r.subConn, err = amqp.Dial(cfg.URL); err != nil {
		return nil, brokerErr(ctx, err)
	}
	r.watch(r.subConn, "consumers'")
	if !owner {
		return r, nil
	}
	if r.pubConn, err = amqp.Dial(cfg.URL); err != nil {
		r.subConn.Close()
		return nil, brokerErr(ctx, err)
	}
	r.watch(r.pubConn, "publisher's")
	if err := r.setup(); err != nil {
		_ = r.close(ctx)
		return nil, brokerErr(ctx, err)
	}
	return r, nil
}

func (r *rabbit) setup() error {
	ch, err := r.pubConn.Channel()
	if err != nil {
		return err
	}
	r.pub = ch
	if _, err := ch.QueueDeclare(r.dlq, false, false, false, false, nil); err != nil {
		return err
	}
	args := amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": r.dlq}
	if _, err := ch.QueueDeclare(r.queue, false, false, false, false, args); err != nil {
		return err
	}
	return ch.Confirm(false)
}

// watch notes conn's close with an error (by the server or the network;
// close, ours, gives none) as the broker's death. The goroutine ends when
// conn closes.
func (r *rabbit) watch(conn *amqp.Connection, role string) {
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		e, ok := <-closed
		if !ok || e == nil {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.died == nil {
			r.died = fmt.Errorf("the RabbitMQ %s connection died: %v", role, e)
		}
	}()
}

func (r *rabbit) lost() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.died
}

func (r *rabbit) url() string { return r.cfg.URL }

func (r *rabbit) resources() []string { return []string{r.queue, r.dlq} }

// publish waits for the broker's confirm.
func (r *rabbit) publish(ctx context.Context, key string, body []byte) error {
	dc, err := r.pub.PublishWithDeferredConfirmWithContext(ctx, "", r.queue, false, false,
		amqp.Publishing{MessageId: key, Body: body, ContentType: "application/json"})
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("publish nacked by the broker")
	}
	return nil
}

// depth returns the ready messages of queue (a passive declare on a
// channel of its own, since a failed one closes the channel).
func (r *rabbit) depth(queue string) (int, error) {
	ch, err := r.pubConn.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	if err != nil {
		return 0, err
	}
	return q.Messages, nil
}

func (r *rabbit) drained(ctx context.Context) (bool, error) {
	n, err := r.depth(r.queue)
	return n == 0, err
}

func (r *rabbit) deadLettered(ctx context.Context) (int, error) { return r.depth(r.dlq) }

func (r *rabbit) restartServer(ctx context.Context) error {
	return fmt.Errorf("%w: no private RabbitMQ server", ErrConfig)
}

func (r *rabbit) close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	r.closed = true
	errs := []error{ignoreClosed(r.subConn.Close())}
	if !r.owner {
		return errors.Join(errs...)
	}
	if ch, err := r.pubConn.Channel(); err == nil {
		_, e1 := ch.QueueDelete(r.queue, false, false, false)
		_, e2 := ch.QueueDelete(r.dlq, false, false, false)
		errs = append(errs, e1, e2, ignoreClosed(ch.Close()))
	} else {
		errs = append(errs, err)
	}
	errs = append(errs, ignoreClosed(r.pubConn.Close()))
	return errors.Join(errs...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, amqp.ErrClosed) {
		return nil
	}
	return err
}

func (r *rabbit) subscribe(ctx context.Context, engine *idem.Engine, fn handler) (subscription, error) {
	ch, err := r.subConn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Qos(r.cfg.Prefetch, 0, false); err != nil {
		ch.Close()
		return nil, err
	}
	ds, err := ch.Consume(r.queue, "", false, false, false, false, nil)
	if err != nil {
		ch.Close()
		return nil, err
	}
	s := &rabbitSub{ch: ch, ds: ds}
	if engine != nil {
		s.c = idemamqp.New(engine, func(ctx context.Context, d *amqp.Delivery) error { return fn(ctx, d.Body) },
			idemamqp.Options{RequeueDelay: r.cfg.RequeueDelay})
	} else {
		s.fn = fn
	}
	return s, nil
}

type rabbitSub struct {
	ch *amqp.Channel
	ds <-chan amqp.Delivery
	c  *idemamqp.Consumer // nil: broker-only
	fn handler
}

func (s *rabbitSub) next(ctx context.Context) (delivery, error) {
	select {
	case d, ok := <-s.ds:
		if !ok {
			return nil, errSubClosed
		}
		return &rabbitDelivery{s: s, d: d}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *rabbitSub) close() { _ = s.ch.Close() }

// nextBatch waits for one delivery, then collects more (prefetch allows
// up to n) until n, linger, or the channel's end.
func (s *rabbitSub) nextBatch(ctx context.Context, n int, linger time.Duration) ([]delivery, error) {
	first, err := s.next(ctx)
	if err != nil {
		return nil, err
	}
	out := []delivery{first}
	t := time.NewTimer(linger)
	defer t.Stop()
	for len(out) < n {
		select {
		case d, ok := <-s.ds:
			if !ok {
				return out, nil // what came is settled in vain and redelivered
			}
			out = append(out, &rabbitDelivery{s: s, d: d})
		case <-t.C:
			return out, nil
		case <-ctx.Done():
			return out, nil
		}
	}
	return out, nil
}

func (s *rabbitSub) processBatch(ctx context.Context, ds []delivery) []idem.Consumed {
	batch := make([]*amqp.Delivery, len(ds))
	for i, d := range ds {
		batch[i] = &d.(*rabbitDelivery).d
	}
	return s.c.ProcessBatch(ctx, batch)
}

type rabbitDelivery struct {
	s *rabbitSub
	d amqp.Delivery
}

func (d *rabbitDelivery) key() string       { return d.d.MessageId }
func (d *rabbitDelivery) body() []byte      { return d.d.Body }
func (d *rabbitDelivery) redelivered() bool { return d.d.Redelivered }

func (d *rabbitDelivery) attempt() int {
	if d.d.Redelivered {
		return 2
	}
	return 1
}

func (d *rabbitDelivery) process(ctx context.Context) (idem.Decision, error) {
	if d.s.c == nil {
		err := d.s.fn(ctx, d.d.Body)
		return directDecision(err), err
	}
	return d.s.c.Process(ctx, &d.d)
}

func (d *rabbitDelivery) settle(ctx context.Context, a idem.Decision, cause error) error {
	if d.s.c == nil {
		// Broker-only: the same calls the adapter makes, without delay.
		switch a {
		case idem.Ack:
			return d.d.Ack(false)
		case idem.DeadLetter:
			return d.d.Reject(false)
		}
		return d.d.Nack(false, true)
	}
	return d.s.c.Settle(ctx, &d.d, a)
}
