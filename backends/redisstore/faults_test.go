package redisstore

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestUnreachableFailsClosed(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: closedAddr(t), DialTimeout: 200 * time.Millisecond,
		DialerRetries: 1, MaxRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c, Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	l := &idem.Lease{Key: "k", Token: 1, Fingerprint: fpA}
	checks := map[string]error{
		"Heartbeat":   s.Heartbeat(ctx, l, longTTL),
		"Complete":    s.Complete(ctx, l, resp("x"), retention),
		"Fail":        s.Fail(ctx, l, resp("x"), retention),
		"Release":     s.Release(ctx, l),
		"WaitChange":  s.WaitChange(ctx, "k"),
		"CheckConfig": s.CheckConfig(ctx),
	}
	lease, rec, err := s.Acquire(ctx, "k", fpA, longTTL)
	if lease != nil || rec != nil {
		t.Fatalf("Acquire on a dead server returned lease %+v record %+v", lease, rec)
	}
	checks["Acquire"] = err
	_, checks["Get"] = s.Get(ctx, "k")
	for op, err := range checks {
		if !errors.Is(err, idem.ErrBackend) {
			t.Errorf("%s: %v, want ErrBackend", op, err)
		}
		// Nothing was sent: the outcome is known to be "not applied".
		if idem.Ambiguous(err) {
			t.Errorf("%s: %v is marked ambiguous, but no command was sent", op, err)
		}
	}
}

func TestCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	s := newStore(t, newClient(t), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Acquire(ctx, "k", fpA, longTTL); err != context.Canceled {
		t.Fatalf("Acquire: %v, want context.Canceled", err)
	}
	l := mustAcquire(t, s, "k2", fpA, longTTL)
	for op, err := range map[string]error{
		"Heartbeat":  s.Heartbeat(ctx, l, longTTL),
		"Complete":   s.Complete(ctx, l, resp("x"), retention),
		"Release":    s.Release(ctx, l),
		"WaitChange": s.WaitChange(ctx, "k2"),
	} {
		if err != context.Canceled {
			t.Errorf("%s: %v, want context.Canceled", op, err)
		}
	}
	if _, err := s.Get(ctxT(t), "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("cancelled Acquire wrote a record: %v", err)
	}
	if rec, err := s.Get(ctxT(t), "k2"); err != nil || rec.Status != idem.StatusInProgress {
		t.Fatalf("cancelled calls changed the record: %+v, %v", rec, err)
	}
}

// proxiedStore returns a store whose client goes through a fault proxy to
// the test Redis, and a store on a direct client sharing its prefix.
func proxiedStore(t *testing.T, opt func(*redis.Options)) (proxied, direct *Store, p *faultProxy) {
	t.Helper()
	direct = newStore(t, newClient(t), Options{})
	o, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p = startFaultProxy(t, o.Addr)
	o.Addr = p.addr()
	o.ReadTimeout = 300 * time.Millisecond
	if opt != nil {
		opt(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	proxied, err = New(c, direct.opts)
	if err != nil {
		t.Fatal(err)
	}
	// Warm up: one pooled connection, scripts in the server's cache.
	l := mustAcquire(t, proxied, "warm", fpA, longTTL)
	if err := proxied.Complete(ctxT(t), l, resp("w"), retention); err != nil {
		t.Fatal(err)
	}
	return proxied, direct, p
}

func TestLostReplyIsAmbiguous(t *testing.T) {
	t.Parallel()
	s, direct, p := proxiedStore(t, func(o *redis.Options) { o.MaxRetries = -1 })
	l := mustAcquire(t, s, "k", fpA, longTTL)

	p.mode.Store(dropReplies)
	err := s.Complete(ctxT(t), l, resp("applied"), retention)
	p.mode.Store(passThrough)
	if !errors.Is(err, idem.ErrBackend) || !idem.Ambiguous(err) {
		t.Fatalf("Complete with lost reply: %v, want ambiguous ErrBackend", err)
	}
	// It was applied: that is why the error must not say "failed".
	if rec, err := direct.Get(ctxT(t), "k"); err != nil || rec.Status != idem.StatusCompleted {
		t.Fatalf("record after lost reply: %+v, %v", rec, err)
	}

	p.mode.Store(dropReplies)
	_, _, err = s.Acquire(ctxT(t), "k2", fpA, longTTL)
	p.mode.Store(passThrough)
	if !errors.Is(err, idem.ErrBackend) || !idem.Ambiguous(err) {
		t.Fatalf("Acquire with lost reply: %v, want ambiguous ErrBackend", err)
	}

	// A read that times out is a backend error, not an ambiguous write.
	p.mode.Store(dropReplies)
	_, err = s.Get(ctxT(t), "k")
	p.mode.Store(passThrough)
	if !errors.Is(err, idem.ErrBackend) || idem.Ambiguous(err) {
		t.Fatalf("Get with lost reply: %v, want plain ErrBackend", err)
	}
}

// TestRetriedDeliveryIsRecognised cuts the connection after a script reached
// Redis, so go-redis sends it again on a new connection: the second run must
// report what the first did, not ErrInProgress or ErrLeaseLost.
func TestRetriedDeliveryIsRecognised(t *testing.T) {
	t.Parallel()
	s, direct, p := proxiedStore(t, func(o *redis.Options) { o.MaxRetries = 3 })

	p.mode.Store(cutAfterNext)
	l, rec, err := s.Acquire(ctxT(t), "k", fpA, longTTL)
	if err != nil || l == nil {
		t.Fatalf("retried Acquire: lease %+v record %+v err %v; want the lease", l, rec, err)
	}
	if p.mode.Load() != passThrough {
		t.Fatal("the proxy did not cut the connection")
	}
	got, err := direct.Get(ctxT(t), "k")
	if err != nil || got.Token != l.Token {
		t.Fatalf("record %+v, %v; lease token %d", got, err, l.Token)
	}

	p.mode.Store(cutAfterNext)
	if err := s.Complete(ctxT(t), l, resp("once"), retention); err != nil {
		t.Fatalf("retried Complete: %v", err)
	}
	if got, err := direct.Get(ctxT(t), "k"); err != nil || got.Status != idem.StatusCompleted || string(got.Response.Body) != "once" {
		t.Fatalf("record %+v, %v", got, err)
	}

	// A second, distinct Complete by the same holder is still refused.
	checkLost(t, "second Complete", s.Complete(ctxT(t), l, resp("twice"), retention))
}

// TestDuplicateScriptRun runs the scripts twice with the same call id, as a
// client-side retry would, without depending on network timing.
func TestDuplicateScriptRun(t *testing.T) {
	t.Parallel()
	s := newStore(t, newClient(t), Options{})
	ctx := ctxT(t)
	k := keysFor(s.opts.Prefix, "k")
	run := func(id string) []any {
		res, err := acquireScript.Run(ctx, s.client, []string{k.record, k.fence()}, fpA.String(), 30000, s.graceMS, id, k.slot).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, again, other := run("id-1"), run("id-1"), run("id-2")
	if first[0] != int64(1) || again[0] != int64(1) || first[1] != again[1] || first[3] != again[3] {
		t.Fatalf("first %v, duplicate %v: want the same lease", first, again)
	}
	if other[0] != int64(0) {
		t.Fatalf("another call got %v, want the record", other)
	}
	tok, ok := replyToken(first, 1)
	if !ok {
		t.Fatalf("token %v is not a decimal string", first[1])
	}
	l := &idem.Lease{Key: "k", Token: tok, Fingerprint: fpA}
	finish := func(id string) error {
		_, err := s.fenced(ctx, "complete", finishScript, l, k, "completed", idem.EncodeResponse(&idem.Response{Status: 201}), 60000, id)
		return err
	}
	if err := finish("f-1"); err != nil {
		t.Fatal(err)
	}
	if err := finish("f-1"); err != nil {
		t.Fatalf("duplicate Complete: %v", err)
	}
	checkLost(t, "another Complete", finish("f-2"))
}
