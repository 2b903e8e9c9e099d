package idemnats_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemnats"
	"github.com/idembench/idembench/internal/testenv"
)

// stream is one test's work stream and dead-letter stream.
type stream struct {
	js           jetstream.JetStream
	name, dlq    string
	subj, dlSubj string
}

func newStream(t *testing.T, ackWait time.Duration) *stream {
	t.Helper()
	nc, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("IDEMNATS_%s_%d", strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name()), time.Now().UnixNano())
	s := &stream{js: js, name: id, dlq: id + "_DLQ", subj: "idemnats." + id, dlSubj: "idemnats.dlq." + id}
	ctx := context.Background()
	for _, cfg := range []jetstream.StreamConfig{
		{Name: s.name, Subjects: []string{s.subj}, Storage: jetstream.MemoryStorage},
		{Name: s.dlq, Subjects: []string{s.dlSubj}, Storage: jetstream.MemoryStorage},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatalf("create stream %s: %v", cfg.Name, err)
		}
	}
	t.Cleanup(func() {
		_ = js.DeleteStream(context.Background(), s.name)
		_ = js.DeleteStream(context.Background(), s.dlq)
	})
	if _, err := js.CreateConsumer(ctx, s.name, jetstream.ConsumerConfig{
		Durable: "work", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 1,
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *stream) publish(t *testing.T, id, body string) {
	t.Helper()
	m := nats.NewMsg(s.subj)
	m.Data = []byte(body)
	if id != "" {
		m.Header.Set("Idem-Key", id)
	}
	if _, err := s.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func (s *stream) messages(t *testing.T) jetstream.MessagesContext {
	t.Helper()
	c, err := s.js.Consumer(context.Background(), s.name, "work")
	if err != nil {
		t.Fatal(err)
	}
	it, err := c.Messages()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(it.Stop)
	return it
}

func next(t *testing.T, it jetstream.MessagesContext) jetstream.Msg {
	t.Helper()
	type res struct {
		m   jetstream.Msg
		err error
	}
	ch := make(chan res, 1)
	go func() { m, err := it.Next(); ch <- res{m, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("next: %v", r.err)
		}
		return r.m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	panic("unreachable")
}

// settled waits until the dead-letter stream holds dead messages and the
// work consumer has nothing pending or unacknowledged.
func (s *stream) settled(t *testing.T, dead int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := s.js.Stream(ctx, s.dlq)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.js.Consumer(ctx, s.name, "work")
		if err != nil {
			t.Fatal(err)
		}
		ci, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := int(info.CachedInfo().State.Msgs)
		if got == dead && ci.NumPending == 0 && ci.NumAckPending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead-letter stream holds %d messages (want %d); work consumer: %d pending, %d unacked", got, dead, ci.NumPending, ci.NumAckPending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handler applies a message's effect to fx, failing once as fail says.
func handler(fx *testenv.Effects, fail map[string]error) idemnats.Handler {
	return func(ctx context.Context, msg jetstream.Msg) error {
		return fx.Apply(msg.Headers().Get("Idem-Key"), fail)
	}
}

func TestHandleSettles(t *testing.T) {
	for _, tt := range testenv.HandleCases(idem.Permanent(errors.New("no such account"))) {
		t.Run(tt.Name, func(t *testing.T) {
			s := newStream(t, 5*time.Second)
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			var fx testenv.Effects
			c := idemnats.New(idem.New(st), handler(&fx, tt.Fail), idemnats.Options{
				Key: idemnats.HeaderKey("Idem-Key"), ConfirmAck: true,
				DeadLetter: idemnats.PublishTo(s.js, s.dlSubj),
			})
			for _, p := range tt.Publish {
				s.publish(t, p[0], p[1])
			}
			it := s.messages(t)
			for i, want := range tt.Decisions {
				m := next(t, it)
				got, err := c.Handle(context.Background(), m)
				if got != want {
					t.Fatalf("message %d: action %s (err %v), want %s", i, got, err, want)
				}
			}
			fx.CheckEffects(t, tt.Effects)
			s.settled(t, tt.DeadLetters)
		})
	}
}

// TestCrashBeforeAck drops a processed message without acking it, as a
// consumer killed after its effect would: JetStream redelivers it after
// AckWait, the redelivery takes the expired lease over and the recovery
// hook finds the effect, so it is acked without a second effect.
func TestCrashBeforeAck(t *testing.T) {
	s := newStream(t, 400*time.Millisecond)
	var fx testenv.Effects
	e := testenv.CrashEngine(t, &fx, "m1", 300*time.Millisecond)
	c := idemnats.New(e, handler(&fx, nil), idemnats.Options{Key: idemnats.HeaderKey("Idem-Key"), RequeueDelay: 50 * time.Millisecond})
	s.publish(t, "m1", "a")
	it := s.messages(t)
	m := next(t, it)
	if _, err := c.Process(context.Background(), m); !errors.Is(err, testenv.ErrCrash) {
		t.Fatalf("first delivery: err %v, want the crash", err)
	}
	for {
		m := next(t, it)
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if md.NumDelivered < 2 {
			t.Fatalf("delivery after the crash has NumDelivered %d", md.NumDelivered)
		}
		a, err := c.Handle(context.Background(), m)
		if a == idem.Ack {
			break
		}
		if a != idem.RedeliverLater || !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("redelivery: action %s, err %v; want redeliver-later while the lease lives", a, err)
		}
	}
	if got := fx.Count("m1"); got != 1 {
		t.Fatalf("effects = %d after crash and redelivery, want 1", got)
	}
	s.settled(t, 0)
}

// TestInProgressKeepsLongHandler runs a handler three times longer than
// AckWait: InProgress keeps the server from redelivering it meanwhile.
func TestInProgressKeepsLongHandler(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("in-progress=%v", keep), func(t *testing.T) {
			s := newStream(t, 300*time.Millisecond)
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			opts := idemnats.Options{Key: idemnats.HeaderKey("Idem-Key"), ConfirmAck: true}
			if keep {
				opts.InProgressInterval = 100 * time.Millisecond
			}
			c := idemnats.New(idem.New(st), func(ctx context.Context, msg jetstream.Msg) error {
				time.Sleep(900 * time.Millisecond)
				return nil
			}, opts)
			s.publish(t, "m1", "a")
			it := s.messages(t)
			m := next(t, it)
			if a, err := c.Handle(context.Background(), m); a != idem.Ack {
				t.Fatalf("action %s, err %v", a, err)
			}
			cons, err := s.js.Consumer(context.Background(), s.name, "work")
			if err != nil {
				t.Fatal(err)
			}
			ci, err := cons.Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			redelivered := ci.NumRedelivered > 0 || ci.Delivered.Consumer > 1
			if redelivered == keep {
				t.Fatalf("in-progress %v: redelivered %v (consumer info %+v)", keep, redelivered, ci.Delivered)
			}
		})
	}
}
