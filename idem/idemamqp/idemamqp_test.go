package idemamqp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemamqp"
	"github.com/idembench/idembench/internal/testenv"
)

// broker is one test's queue (with a dead-letter queue) on the test server.
type broker struct {
	conn       *amqp.Connection
	ch         *amqp.Channel
	queue, dlq string
}

func newBroker(t *testing.T) *broker {
	t.Helper()
	conn, err := amqp.Dial(testenv.AMQPURL(t))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{conn: conn, ch: ch}
	name := fmt.Sprintf("idemamqp-test-%s-%d", t.Name(), time.Now().UnixNano())
	b.queue, b.dlq = name, name+".dlq"
	if _, err := ch.QueueDeclare(b.dlq, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	args := amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": b.dlq}
	if _, err := ch.QueueDeclare(b.queue, false, false, false, false, args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		_, _ = ch.QueueDelete(b.queue, false, false, false)
		_, _ = ch.QueueDelete(b.dlq, false, false, false)
		ch.Close()
	})
	return b
}

func (b *broker) publish(t *testing.T, id, body string) {
	t.Helper()
	err := b.ch.PublishWithContext(context.Background(), "", b.queue, false, false,
		amqp.Publishing{MessageId: id, Body: []byte(body)})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// depth returns the number of ready messages in queue.
func (b *broker) depth(t *testing.T, queue string) int {
	t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, queueArgs(b, queue))
	if err != nil {
		t.Fatalf("passive declare %s: %v", queue, err)
	}
	return q.Messages
}

func queueArgs(b *broker, queue string) amqp.Table {
	if queue == b.queue {
		return amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": b.dlq}
	}
	return nil
}

// deliveries starts a consumer on a fresh channel with prefetch 1.
func (b *broker) deliveries(t *testing.T) (*amqp.Channel, <-chan amqp.Delivery) {
	t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(b.queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ch, ds
}

func next(t *testing.T, ds <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case d, ok := <-ds:
		if !ok {
			t.Fatal("delivery channel closed")
		}
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery within 10s")
	}
	panic("unreachable")
}

// handler applies a message's effect to fx, failing once as fail says.
func handler(fx *testenv.Effects, fail map[string]error) idemamqp.Handler {
	return func(ctx context.Context, d *amqp.Delivery) error { return fx.Apply(d.MessageId, fail) }
}

func TestHandleSettles(t *testing.T) {
	for _, tt := range testenv.HandleCases(idem.Permanent(errors.New("no such account"))) {
		t.Run(tt.Name, func(t *testing.T) {
			b := newBroker(t)
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			var fx testenv.Effects
			c := idemamqp.New(idem.New(st), handler(&fx, tt.Fail), idemamqp.Options{})
			for _, p := range tt.Publish {
				b.publish(t, p[0], p[1])
			}
			_, ds := b.deliveries(t)
			for i, want := range tt.Decisions {
				d := next(t, ds)
				got, err := c.Handle(context.Background(), &d)
				if got != want {
					t.Fatalf("delivery %d (%q, redelivered %v): action %s (err %v), want %s", i, d.MessageId, d.Redelivered, got, err, want)
				}
			}
			fx.CheckEffects(t, tt.Effects)
			waitDepth(t, b, b.dlq, tt.DeadLetters)
			waitDepth(t, b, b.queue, 0)
		})
	}
}

// waitDepth waits until queue holds want ready messages (acks and
// dead-lettering are asynchronous).
func waitDepth(t *testing.T, b *broker, queue string, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := b.depth(t, queue)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s holds %d messages, want %d", queue, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrashBeforeAck abandons a processed delivery without acking it and
// closes the channel, as a consumer killed after its effect would: RabbitMQ
// redelivers it to another consumer, which is requeued while the dead
// consumer's lease lives, then takes the key over and, with a recovery
// hook that finds the effect, acks it without applying it again.
func TestCrashBeforeAck(t *testing.T) {
	b := newBroker(t)
	var fx testenv.Effects
	e := testenv.CrashEngine(t, &fx, "m1", 300*time.Millisecond)
	c := idemamqp.New(e, handler(&fx, nil), idemamqp.Options{RequeueDelay: 50 * time.Millisecond})
	b.publish(t, "m1", "a")

	ch1, ds1 := b.deliveries(t)
	d := next(t, ds1)
	if _, err := c.Process(context.Background(), &d); !errors.Is(err, testenv.ErrCrash) {
		t.Fatalf("first delivery: err %v, want the crash", err)
	}
	ch1.Close() // the consumer dies without acking

	_, ds2 := b.deliveries(t)
	var actions []idem.Decision
	for {
		d := next(t, ds2)
		if !d.Redelivered {
			t.Fatalf("delivery after the crash not marked redelivered")
		}
		a, err := c.Handle(context.Background(), &d)
		actions = append(actions, a)
		if a == idem.Ack {
			break
		}
		if a != idem.RedeliverLater || !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("redelivery: action %s, err %v; want redeliver-later while the lease lives", a, err)
		}
	}
	if got := fx.Count("m1"); got != 1 {
		t.Fatalf("effects = %d after crash and redelivery, want 1 (actions %v)", got, actions)
	}
	waitDepth(t, b, b.queue, 0)
}
