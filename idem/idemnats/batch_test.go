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
	publish := [][2]string{{"m1", "a"}, {"m1", "a"}, {"m2", "b"}, {"", "x"}, {"p", "x"}, {"m2", "c"}}
	want := []idem.Decision{idem.Ack, idem.Ack, idem.Ack, idem.DeadLetter, idem.DeadLetter, idem.DeadLetter}
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
	if len(got) != len(batch) {
		t.Fatalf("%d answers for %d messages", len(got), len(batch))
	}
	for i, p := range got {
		if p.Decision != want[i] {
			t.Errorf("message %d (%q %q): action %s (err %v), want %s", i, publish[i][0], publish[i][1], p.Decision, p.Err, want[i])
		}
		if err := c.Settle(ctx, batch[i], p.Decision, p.Err); err != nil {
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
