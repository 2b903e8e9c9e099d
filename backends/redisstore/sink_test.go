package redisstore

import (
	"errors"
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestFencedSink(t *testing.T) {
	t.Parallel()
	client := newClient(t)
	f, err := NewFencedSink(client, cleanPrefix(t, client))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, _, err := f.Last(ctx, "charge"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Last before any write: %v", err)
	}
	steps := []struct {
		token idem.Token
		value string
		want  bool
	}{
		{5, "by 5", true},
		{3, "by 3 (stale)", false},
		{5, "by 5 again", true}, // the same holder retrying
		{9, "by 9", true},
		{8, "by 8 (stale)", false},
	}
	for _, st := range steps {
		got, err := f.ApplyFenced(ctx, "charge", st.token, st.value)
		if err != nil || got != st.want {
			t.Fatalf("ApplyFenced(%d) = %v, %v; want %v", st.token, got, err, st.want)
		}
	}
	tok, val, err := f.Last(ctx, "charge")
	if err != nil || tok != 9 || val != "by 9" {
		t.Fatalf("Last = %d %q %v", tok, val, err)
	}
	// Effect keys are independent of each other.
	if ok, err := f.ApplyFenced(ctx, "{refund}", 1, "r"); !ok || err != nil {
		t.Fatalf("other effect key: %v %v", ok, err)
	}
	if _, err := f.ApplyFenced(ctx, "charge", 0, "x"); err == nil {
		t.Fatal("token 0 accepted")
	}
	if err := client.HSet(ctx, f.key("bad"), "token", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ApplyFenced(ctx, "bad", 1, "x"); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Fatalf("garbage token: %v, want ErrCorruptRecord", err)
	}
	if _, _, err := f.Last(ctx, "bad"); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Fatalf("Last of garbage: %v, want ErrCorruptRecord", err)
	}
}

// TestFencedSinkRejectsTakenOverHolder plays the stalled-holder story: the
// first holder's lease is taken over, the successor applies its effect, and
// the first holder's late effect is rejected.
func TestFencedSinkRejectsTakenOverHolder(t *testing.T) {
	t.Parallel()
	client := newClient(t)
	s := newStore(t, client, Options{})
	f, err := NewFencedSink(client, s.opts.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	old := mustAcquire(t, s, "order-1", fpA, shortTTL)
	waitLeaseExpired(t, old)
	succ := mustAcquire(t, s, "order-1", fpA, longTTL)
	if ok, err := f.ApplyFenced(ctxT(t), "order-1", succ.Token, "successor"); !ok || err != nil {
		t.Fatalf("successor: %v %v", ok, err)
	}
	if ok, err := f.ApplyFenced(ctxT(t), "order-1", old.Token, "stalled"); ok || err != nil {
		t.Fatalf("stalled holder: applied=%v err=%v, want rejected", ok, err)
	}
}
