package testenv

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// What the broker adapters' tests (idem/idemamqp, idem/idemnats) share:
// the effects a handler applied, a store that counts claims, and the cases
// of a Handle test, the same on every broker.

// Effects counts a consumer handler's applied effects per message key. Its
// zero value is ready.
type Effects struct {
	mu sync.Mutex
	n  map[string]int
}

// Apply applies key's effect, unless fail holds an error for key: then it
// returns that error and forgets it (a message fails once).
func (e *Effects) Apply(key string, fail map[string]error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := fail[key]; err != nil {
		delete(fail, key)
		return err
	}
	if e.n == nil {
		e.n = map[string]int{}
	}
	e.n[key]++
	return nil
}

// Count returns how many times key's effect was applied.
func (e *Effects) Count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[key]
}

// CheckEffects fails t unless every key of want had its count of effects.
func (e *Effects) CheckEffects(t testing.TB, want map[string]int) {
	t.Helper()
	for key, n := range want {
		if got := e.Count(key); got != n {
			t.Errorf("effects of %q = %d, want %d", key, got, n)
		}
	}
}

// ErrCrash is the error of CrashEngine's crash.
var ErrCrash = errors.New("crash")

// CrashEngine returns an engine on a new memory store (closed at the end of
// t) whose first execution crashes right after its function ran, before
// its completion is recorded (a consumer killed between its effect and its
// ack), with lease ttl, and whose recovery hook finds the effect of key in
// fx: a redelivery that takes the key over completes it without applying
// the effect again.
func CrashEngine(t testing.TB, fx *Effects, key string, ttl time.Duration) *idem.Engine {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	var once sync.Once
	hook := func(ctx context.Context, p idem.Point, l idem.Lease) error {
		var err error
		if p == idem.PointAfterFn {
			once.Do(func() { err = ErrCrash })
		}
		return err
	}
	recovery := func(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
		return idem.Response{Status: 200}, fx.Count(key) > 0, nil
	}
	return idem.New(st, idem.WithLeaseTTL(ttl), idem.WithHook(hook), idem.WithRecovery(recovery))
}

// CountingStore is a memory store that counts the claims that reach it,
// key by key and in batches.
type CountingStore struct {
	*memstore.Store
	Acquires, Batches atomic.Int64
}

// NewCountingStore returns a CountingStore, closed at the end of t.
func NewCountingStore(t testing.TB) *CountingStore {
	s := &CountingStore{Store: memstore.New(memstore.Options{})}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *CountingStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	s.Acquires.Add(1)
	return s.Store.Acquire(ctx, key, fp, ttl)
}

func (s *CountingStore) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, ttl time.Duration) []idem.AcquireResult {
	s.Batches.Add(1)
	return s.Store.AcquireBatch(ctx, reqs, ttl)
}

// BatchPublish is what the ProcessBatch tests publish, in order: a
// duplicate inside the batch, a message without a key, the poison message
// "p" (HandleCases' poison) and a key reused with another payload.
var BatchPublish = [][2]string{{"m1", "a"}, {"m1", "a"}, {"m2", "b"}, {"", "x"}, {"p", "x"}, {"m2", "c"}}

// CheckBatch checks the answers of a ProcessBatch of BatchPublish (the
// handler failing "p" with poison) and what it did: the duplicate acked,
// the other three dead-lettered with their errors, one effect per key, and
// the keys claimed in one store call per round (the duplicates make a
// second round), never key by key.
func CheckBatch(t testing.TB, got []idem.Consumed, poison error, fx *Effects, st *CountingStore) {
	t.Helper()
	want := []idem.Decision{idem.Ack, idem.Ack, idem.Ack, idem.DeadLetter, idem.DeadLetter, idem.DeadLetter}
	if len(got) != len(want) {
		t.Fatalf("%d answers for %d messages", len(got), len(want))
	}
	for i, p := range got {
		if p.Decision != want[i] {
			t.Errorf("message %d (%q %q): action %s (err %v), want %s", i, BatchPublish[i][0], BatchPublish[i][1], p.Decision, p.Err, want[i])
		}
	}
	if !errors.Is(got[3].Err, idem.ErrInvalidKey) || !errors.Is(got[5].Err, idem.ErrFingerprintMismatch) || !errors.Is(got[4].Err, poison) {
		t.Errorf("errors %v, %v, %v: want invalid key, poison, fingerprint mismatch", got[3].Err, got[4].Err, got[5].Err)
	}
	fx.CheckEffects(t, map[string]int{"m1": 1, "m2": 1, "p": 0})
	if a, bt := st.Acquires.Load(), st.Batches.Load(); a != 0 || bt != 2 {
		t.Errorf("%d single claims and %d batch claims, want 0 and 2 (distinct keys, then the duplicates)", a, bt)
	}
}

// HandleCase is one case of a consumer's Handle test: messages published
// (key, body; an empty key is a message without one), the handler's
// failures, the decision for each delivery in order, the effects applied
// and how many messages end dead-lettered.
type HandleCase struct {
	Name        string
	Publish     [][2]string
	Fail        map[string]error
	Decisions   []idem.Decision
	Effects     map[string]int
	DeadLetters int
}

// HandleCases returns the Handle cases every broker adapter passes; the
// handler fails message "p" with poison, a permanent error.
func HandleCases(poison error) []HandleCase {
	return []HandleCase{
		{Name: "duplicate publish applied once",
			Publish:   [][2]string{{"m1", "a"}, {"m1", "a"}},
			Decisions: []idem.Decision{idem.Ack, idem.Ack},
			Effects:   map[string]int{"m1": 1}},
		{Name: "retryable failure redelivered",
			Publish:   [][2]string{{"m1", "a"}},
			Fail:      map[string]error{"m1": errors.New("timeout")},
			Decisions: []idem.Decision{idem.Redeliver, idem.Ack},
			Effects:   map[string]int{"m1": 1}},
		{Name: "poison dead-lettered once, duplicate acked",
			Publish:     [][2]string{{"p", "x"}, {"p", "x"}},
			Fail:        map[string]error{"p": poison},
			Decisions:   []idem.Decision{idem.DeadLetter, idem.Ack},
			Effects:     map[string]int{"p": 0},
			DeadLetters: 1},
		{Name: "missing key dead-lettered",
			Publish:     [][2]string{{"", "a"}},
			Decisions:   []idem.Decision{idem.DeadLetter},
			DeadLetters: 1},
		{Name: "reused key with another payload dead-lettered",
			Publish:     [][2]string{{"m1", "a"}, {"m1", "b"}},
			Decisions:   []idem.Decision{idem.Ack, idem.DeadLetter},
			Effects:     map[string]int{"m1": 1},
			DeadLetters: 1},
	}
}

// Brokers' names, as consume.RabbitMQ and consume.NATS.
const (
	RabbitMQ = "rabbitmq"
	NATS     = "nats"
)

// LeftOnBroker returns those of the queues (RabbitMQ: a passive declare
// that does not fail with NOT_FOUND) or streams (NATS) named that still
// exist on the broker at url. It fails t when the run named none.
func LeftOnBroker(t testing.TB, broker, url string, names []string) []string {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("the run named no queues or streams")
	}
	var left []string
	switch broker {
	case RabbitMQ:
		conn := dialAMQP(t, url)
		for _, q := range names {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			_, err = ch.QueueDeclarePassive(q, false, false, false, false, nil)
			if ae := (*amqp.Error)(nil); !errors.As(err, &ae) || ae.Code != amqp.NotFound {
				left = append(left, q) // a failed passive declare closes the channel
				ch.Close()
			}
		}
	case NATS:
		js := jetStream(t, url)
		for _, s := range names {
			if _, err := js.Stream(context.Background(), s); !errors.Is(err, jetstream.ErrStreamNotFound) {
				left = append(left, s)
			}
		}
	default:
		t.Fatalf("unknown broker %q", broker)
	}
	return left
}

// RemoveFromBroker deletes the queues (RabbitMQ) or streams (NATS) named
// on the broker at url: what a run whose broker died could not remove.
func RemoveFromBroker(t testing.TB, broker, url string, names []string) {
	t.Helper()
	switch broker {
	case RabbitMQ:
		ch, err := dialAMQP(t, url).Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		for _, q := range names {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				t.Errorf("delete queue %s: %v", q, err)
			}
		}
	case NATS:
		js := jetStream(t, url)
		for _, s := range names {
			if err := js.DeleteStream(context.Background(), s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Errorf("delete stream %s: %v", s, err)
			}
		}
	default:
		t.Fatalf("unknown broker %q", broker)
	}
}

// dialAMQP connects to the RabbitMQ server at url for the rest of t.
func dialAMQP(t testing.TB, url string) *amqp.Connection {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// jetStream connects to the NATS server at url for the rest of t.
func jetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
