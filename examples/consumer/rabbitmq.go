package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemamqp"
)

// runRabbitMQ runs the example on a queue that dead-letters to a second
// queue, both created for the run and deleted at its end.
func runRabbitMQ(ctx context.Context, cfg config, eng *idem.Engine, l *ledger, msgs []message, copies []int, rep *report) error {
	url := cfg.url
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	queue := fmt.Sprintf("example.consumer.%d", time.Now().UnixNano())
	dlq := queue + ".dlq"
	if _, err := ch.QueueDeclare(dlq, false, false, false, false, nil); err != nil {
		return err
	}
	args := amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
	if _, err := ch.QueueDeclare(queue, false, false, false, false, args); err != nil {
		return err
	}
	defer func() {
		_, _ = ch.QueueDelete(queue, false, false, false)
		_, _ = ch.QueueDelete(dlq, false, false, false)
	}()
	for i, m := range msgs {
		body, _ := json.Marshal(m)
		for range copies[i] {
			// The message id is the idempotency key.
			p := amqp.Publishing{MessageId: m.ID, ContentType: "application/json", Body: body}
			if err := ch.PublishWithContext(ctx, "", queue, false, false, p); err != nil {
				return err
			}
		}
	}

	c := idemamqp.New(eng, func(ctx context.Context, d *amqp.Delivery) error {
		var m message
		if err := json.Unmarshal(d.Body, &m); err != nil {
			return idem.Permanent(err)
		}
		return l.charge(ctx, m)
	}, idemamqp.Options{RequeueDelay: 100 * time.Millisecond})

	if err := consumeRabbitMQ(ctx, conn, queue, c, cfg.workers, rep); err != nil {
		return err
	}
	// Dead-lettering is asynchronous: wait for the count to settle.
	for deadline := time.Now().Add(2 * time.Second); ; {
		q, err := ch.QueueDeclarePassive(dlq, false, false, false, false, nil)
		if err != nil {
			return err
		}
		rep.deadLettered = q.Messages
		if rep.deadLettered >= rep.actions["dead-letter"] || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consumeRabbitMQ runs workers consumers, each on its own channel, until
// every published copy is settled. A consumer that crashes is replaced.
func consumeRabbitMQ(ctx context.Context, conn *amqp.Connection, queue string, c *idemamqp.Consumer, workers int, rep *report) error {
	var mu sync.Mutex
	done := make(chan struct{})
	finished := false
	settle := func(a idem.Decision, d *amqp.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		rep.count(a.String(), d.Redelivered)
		// A redelivery counted after the last copy settled leaves the count
		// where it was: close once.
		if !finished && rep.settled() >= rep.published {
			finished = true
			close(done)
		}
	}
	var wg sync.WaitGroup
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	var consume func()
	consume = func() {
		sub, err := conn.Channel()
		if err != nil {
			return
		}
		defer sub.Close()
		_ = sub.Qos(1, 0, false)
		ds, err := sub.Consume(queue, "", false, false, false, false, nil)
		if err != nil {
			return
		}
		for {
			select {
			case <-wctx.Done():
				return
			case d, ok := <-ds:
				if !ok {
					return
				}
				a, err := c.Process(wctx, &d)
				if errors.Is(err, errCrash) {
					// The consumer dies: no ack; closing its channel (the
					// deferred Close) makes RabbitMQ redeliver the message.
					mu.Lock()
					rep.crashes++
					mu.Unlock()
					wg.Go(consume) // a new consumer takes its place
					return
				}
				if c.Settle(wctx, &d, a) == nil {
					settle(a, &d)
				}
			}
		}
	}
	for range workers {
		wg.Go(consume)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	cancel()
	wg.Wait()
	return nil
}
