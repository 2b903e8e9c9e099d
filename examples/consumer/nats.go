package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemnats"
)

// runNATS runs the example on a JetStream stream with a durable pull
// consumer and a dead-letter stream, both created for the run and deleted
// at its end.
func runNATS(ctx context.Context, cfg config, eng *idem.Engine, l *ledger, msgs []message, copies []int, rep *report) error {
	url := cfg.url
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	id := time.Now().UnixNano()
	stream, dlq := fmt.Sprintf("EXAMPLE_CONSUMER_%d", id), fmt.Sprintf("EXAMPLE_CONSUMER_%d_DLQ", id)
	subj, dlqSubj := fmt.Sprintf("example.consumer.%d", id), fmt.Sprintf("example.consumer.%d.dlq", id)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subj}, Storage: jetstream.MemoryStorage}); err != nil {
		return err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), stream)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: dlq, Subjects: []string{dlqSubj}, Storage: jetstream.MemoryStorage}); err != nil {
		return err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), dlq)
	// A message the dead consumer leaves unacknowledged comes back after
	// AckWait.
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: "payments", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * leaseTTL})
	if err != nil {
		return err
	}
	for i, m := range msgs {
		body, _ := json.Marshal(m)
		for range copies[i] {
			// The key travels in a header of its own: JetStream would drop
			// duplicates that carry the same Nats-Msg-Id within its
			// duplicate window, and this example wants them delivered.
			out := nats.NewMsg(subj)
			out.Data = body
			out.Header.Set("Idempotency-Key", m.ID)
			if _, err := js.PublishMsg(ctx, out); err != nil {
				return err
			}
		}
	}

	c := idemnats.New(eng, func(ctx context.Context, msg jetstream.Msg) error {
		var m message
		if err := json.Unmarshal(msg.Data(), &m); err != nil {
			return idem.Permanent(err)
		}
		return l.charge(ctx, m)
	}, idemnats.Options{
		Key:          idemnats.HeaderKey("Idempotency-Key"),
		RequeueDelay: 100 * time.Millisecond,
		// Long handlers keep their message with InProgress.
		InProgressInterval: leaseTTL / 2,
		ConfirmAck:         true,
		DeadLetter:         idemnats.PublishTo(js, dlqSubj),
	})

	if err := consumeNATS(ctx, cons, c, cfg.workers, rep); err != nil {
		return err
	}
	info, err := js.Stream(context.WithoutCancel(ctx), dlq)
	if err != nil {
		return err
	}
	rep.deadLettered = int(info.CachedInfo().State.Msgs)
	return nil
}

// consumeNATS runs workers pull consumers on cons until every published
// copy is settled. A consumer that crashes is replaced.
func consumeNATS(ctx context.Context, cons jetstream.Consumer, c *idemnats.Consumer, workers int, rep *report) error {
	var mu sync.Mutex
	settle := func(a idem.Decision, msg jetstream.Msg) {
		md, _ := msg.Metadata()
		mu.Lock()
		defer mu.Unlock()
		rep.count(a.String(), md != nil && md.NumDelivered > 1)
	}
	var wg sync.WaitGroup
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	var consume func()
	var pull func(jetstream.MessagesContext) bool
	consume = func() {
		// A subscription can end without the run ending: a busy server
		// times out the subscribe call or misses the pull's heartbeats
		// (Next returns an error). A consumer that gave up then would leave
		// the run without one (with one worker, waiting forever):
		// subscribe again until the run ends.
		for wctx.Err() == nil {
			it, err := cons.Messages(jetstream.PullMaxMessages(1))
			if err != nil {
				select {
				case <-wctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			if crashed := pull(it); crashed {
				return
			}
		}
	}
	pull = func(it jetstream.MessagesContext) (crashed bool) {
		stop := context.AfterFunc(wctx, it.Stop)
		defer stop()
		defer it.Stop()
		for {
			msg, err := it.Next()
			if err != nil {
				return false // stopped, or the subscription broke
			}
			a, err := c.Process(wctx, msg)
			if errors.Is(err, errCrash) {
				// The consumer dies: no ack; JetStream redelivers the
				// message after AckWait.
				mu.Lock()
				rep.crashes++
				mu.Unlock()
				wg.Go(consume) // a new consumer takes its place
				return true
			}
			if c.Settle(wctx, msg, a, err) == nil {
				settle(a, msg)
			}
		}
	}
	for range workers {
		wg.Go(consume)
	}
	// Every copy is settled when the consumer has nothing left to deliver
	// and nothing delivered awaits its ack: asked of the server, not counted
	// here, so a settle whose confirmation was lost (the ack reached the
	// server, its reply did not reach us) cannot leave the run waiting.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		info, err := cons.Info(ctx)
		mu.Lock()
		counted := rep.settled()
		mu.Unlock()
		if err == nil && counted > 0 && info.NumPending == 0 && info.NumAckPending == 0 {
			cancel()
			wg.Wait()
			return nil
		}
	}
}
