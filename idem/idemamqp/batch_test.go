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
	publish := [][2]string{{"m1", "a"}, {"m1", "a"}, {"m2", "b"}, {"", "x"}, {"p", "x"}, {"m2", "c"}}
	want := []idem.Decision{idem.Ack, idem.Ack, idem.Ack, idem.DeadLetter, idem.DeadLetter, idem.DeadLetter}
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
	if len(got) != len(batch) {
		t.Fatalf("%d answers for %d deliveries", len(got), len(batch))
	}
	for i, p := range got {
		if p.Decision != want[i] {
			t.Errorf("delivery %d (%q %q): action %s (err %v), want %s", i, publish[i][0], publish[i][1], p.Decision, p.Err, want[i])
		}
		if err := c.Settle(context.Background(), batch[i], p.Decision); err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(got[3].Err, idem.ErrInvalidKey) || !errors.Is(got[5].Err, idem.ErrFingerprintMismatch) || !errors.Is(got[4].Err, poison) {
		t.Errorf("errors %v, %v, %v: want invalid key, poison, fingerprint mismatch", got[3].Err, got[4].Err, got[5].Err)
	}
	fx.CheckEffects(t, map[string]int{"m1": 1, "m2": 1, "p": 0})
	if a, bt := st.Acquires.Load(), st.Batches.Load(); a != 0 || bt != 2 {
		t.Errorf("%d single claims and %d batch claims, want 0 and 2 (distinct keys, then the duplicates)", a, bt)
	}
	waitDepth(t, b, b.dlq, 3)
	waitDepth(t, b, b.queue, 0)
	if got := c.ProcessBatch(context.Background(), nil); len(got) != 0 {
		t.Fatalf("empty batch: %d answers", len(got))
	}
}
