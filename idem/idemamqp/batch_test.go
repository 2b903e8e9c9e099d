package idemamqp_test

import (
	"context"
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemamqp"
	"github.com/idembench/idembench/internal/testenv"
)

// TestProcessBatch pulls six deliveries with prefetch 6 and processes them
// as one batch: a duplicate inside the batch is acked without a second
// effect, a poison message, a delivery with no message-id and an id reused
// with another payload are dead-lettered, and the keys are claimed in one
// store call per round (the duplicates make a second round), never key by
// key.
func TestProcessBatch(t *testing.T) {
	b := newBroker(t)
	st := testenv.NewCountingStore(t)
	var fx testenv.Effects
	poison := idem.Permanent(errors.New("no such account"))
	c := idemamqp.New(idem.New(st), handler(&fx, map[string]error{"p": poison}), idemamqp.Options{})
	publish := testenv.BatchPublish
	for _, p := range publish {
		b.publish(t, p[0], p[1])
	}
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Qos(len(publish), 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(b.queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var batch []*amqp.Delivery
	for range publish {
		d := next(t, ds)
		batch = append(batch, &d)
	}
	got := c.ProcessBatch(context.Background(), batch)
	testenv.CheckBatch(t, got, poison, &fx, st)
	for i, p := range got {
		if err := c.Settle(context.Background(), batch[i], p.Decision); err != nil {
			t.Fatal(err)
		}
	}
	waitDepth(t, b, b.dlq, 3)
	waitDepth(t, b, b.queue, 0)
	if got := c.ProcessBatch(context.Background(), nil); len(got) != 0 {
		t.Fatalf("empty batch: %d answers", len(got))
	}
}
