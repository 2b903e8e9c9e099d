package idemnats_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemnats"
	"github.com/idembench/idembench/internal/testenv"
)

// TestProcessBatch fetches six messages with one Fetch(6) and processes
// them as one batch: a duplicate inside the batch is acked without a
// second effect, a poison message, a message with no key and a key reused
// with another payload are dead-lettered (PublishTo, then Term), and the
// keys are claimed in one store call per round (the duplicates make a
// second round), never key by key.
func TestProcessBatch(t *testing.T) {
	s := newStream(t, 5*time.Second)
	ctx := context.Background()
	cons, err := s.js.CreateConsumer(ctx, s.name, jetstream.ConsumerConfig{
		Durable: "batch", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxAckPending: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := testenv.NewCountingStore(t)
	var fx testenv.Effects
	poison := idem.Permanent(errors.New("no such account"))
	c := idemnats.New(idem.New(st), handler(&fx, map[string]error{"p": poison}), idemnats.Options{
		Key: idemnats.HeaderKey("Idem-Key"), ConfirmAck: true, DeadLetter: idemnats.PublishTo(s.js, s.dlSubj),
		InProgressInterval: time.Millisecond,
	})
	publish := testenv.BatchPublish
	for _, p := range publish {
		s.publish(t, p[0], p[1])
	}
	mb, err := cons.Fetch(len(publish), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var batch []jetstream.Msg
	for m := range mb.Messages() {
		batch = append(batch, m)
	}
	if len(batch) != len(publish) {
		t.Fatalf("fetched %d messages, want %d (%v)", len(batch), len(publish), mb.Error())
	}
	got := c.ProcessBatch(ctx, batch)
	testenv.CheckBatch(t, got, poison, &fx, st)
	for i, p := range got {
		if err := c.Settle(ctx, batch[i], p.Decision, p.Err); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		dlq, err := s.js.Stream(ctx, s.dlq)
		if err != nil {
			t.Fatal(err)
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dead := dlq.CachedInfo().State.Msgs
		if dead == 3 && ci.NumPending == 0 && ci.NumAckPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead-letter stream holds %d messages (want 3); %d pending, %d unacked", dead, ci.NumPending, ci.NumAckPending)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := c.ProcessBatch(ctx, nil); len(got) != 0 {
		t.Fatalf("empty batch: %d answers", len(got))
	}
}
