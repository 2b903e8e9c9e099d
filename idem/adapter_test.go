package idem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// message is a broker message of a test: an idempotency key and a body.
type message struct{ key, body string }

func TestMessageConsumer(t *testing.T) {
	errNoKey := errors.New("no key")
	runs := map[string]int{}
	c := idem.NewMessageConsumer("test", idem.New(memstore.New(memstore.Options{SweepInterval: -1})),
		func(_ context.Context, m message) error { runs[m.body]++; return nil },
		func(m message) (string, error) {
			if m.key == "" {
				return "", errNoKey
			}
			return m.key, nil
		},
		func(m message) idem.Fingerprint { return idem.NewFingerprint([]byte(m.body)) })
	ctx := context.Background()
	if d, err := c.Consume(ctx, message{"k1", "a"}); d != idem.Ack || err != nil {
		t.Fatalf("Consume = %v, %v; want ack", d, err)
	}
	if d, err := c.Consume(ctx, message{"", "b"}); d != idem.DeadLetter || !errors.Is(err, errNoKey) {
		t.Fatalf("Consume without a key = %v, %v; want dead-letter with the key's error", d, err)
	}
	got := c.ConsumeBatch(ctx, []message{{"k1", "a"}, {"", "c"}, {"k2", "d"}})
	want := []idem.Decision{idem.Ack, idem.DeadLetter, idem.Ack}
	for i, r := range got {
		if r.Decision != want[i] {
			t.Errorf("batch entry %d = %v, %v; want %v", i, r.Decision, r.Err, want[i])
		}
	}
	if !errors.Is(got[1].Err, errNoKey) {
		t.Errorf("batch entry 1: err = %v, want the key's error", got[1].Err)
	}
	if runs["a"] != 1 || runs["b"]+runs["c"] != 0 || runs["d"] != 1 {
		t.Errorf("handler runs = %v, want a and d once each", runs)
	}
	if n := len(c.ConsumeBatch(ctx, nil)); n != 0 {
		t.Errorf("empty batch: %d entries", n)
	}
	defer func() {
		if r := recover(); r != "test: New with nil engine or handler" {
			t.Errorf("NewMessageConsumer with a nil engine: recovered %v", r)
		}
	}()
	idem.NewMessageConsumer[message]("test", nil, nil, nil, nil)
}
