package netfault

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

func TestNewAcceptsLoopbackOnly(t *testing.T) {
	tests := []struct {
		upstream string
		wantErr  error // nil: accepted
	}{
		{"127.0.0.1:6379", nil},
		{"127.0.0.2:6379", nil},
		{"[::1]:6379", nil},
		{"localhost:6379", nil},
		{"10.0.0.1:6379", ErrNotLoopback},
		{"192.168.1.1:5432", ErrNotLoopback},
		{"8.8.8.8:53", ErrNotLoopback},
		{"[::]:6379", ErrNotLoopback},
		{"example.com:80", ErrNotLoopback}, // never resolved
		{"127.0.0.1", errAny},
		{"", errAny},
	}
	for _, tc := range tests {
		t.Run(tc.upstream, func(t *testing.T) {
			p, err := New(t.Context(), tc.upstream, Options{})
			if err == nil {
				defer p.Close()
				host, _, _ := net.SplitHostPort(p.Addr())
				if host != "127.0.0.1" {
					t.Errorf("Addr() = %s, want 127.0.0.1:PORT", p.Addr())
				}
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("New(%q) = %v, want success", tc.upstream, err)
			case tc.wantErr == errAny && err == nil:
				t.Errorf("New(%q) succeeded, want an error", tc.upstream)
			case tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Errorf("New(%q) = %v, want %v", tc.upstream, err, tc.wantErr)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestOnRefusesWhatAProxyCannotInject(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.Addr(), Options{})
	for _, f := range []chaos.Fault{
		{Kind: history.FaultLatency},
		{Kind: history.FaultLatency, Latency: 10 * time.Millisecond, Jitter: 20 * time.Millisecond},
		{Kind: history.FaultPartition, Latency: time.Second},
		{Kind: history.FaultCrash, Count: 1},
		{Kind: history.FaultRestart},
		{Kind: "flood"},
		{},
	} {
		if err := p.On(f); err == nil {
			t.Errorf("On(%+v) succeeded", f)
		}
	}
	if len(p.Active()) != 0 || len(p.Windows()) != 0 {
		t.Errorf("a refused fault left Active %v, Windows %v", p.Active(), p.Windows())
	}
}

func TestWindowsRecordEveryFault(t *testing.T) {
	echo := startEcho(t)
	var now int64
	p := newProxy(t, echo.Addr(), Options{Clock: func() int64 { now += 10; return now }})

	steps := []func() error{
		func() error { return p.Latency(50*time.Millisecond, 10*time.Millisecond) }, // 10
		func() error { return p.Latency(50*time.Millisecond, 10*time.Millisecond) }, // no-op, no clock read
		func() error { return p.Latency(80*time.Millisecond, 0) },                   // 20: ends and opens
		p.Partition, // 30
		func() error { return p.Off(history.FaultPartition) }, // 40
		func() error { return p.Off(history.FaultPartition) }, // not on: no-op, 50
		p.DropRepliesAfterApply,                               // 60
		p.Reset,                                               // 70
		p.Heal,                                                // 80: closes all three
		p.DropRepliesAfterApply,                               // 90, left open
		func() error { return p.On(chaos.Fault{Kind: "bad"}) }, // rejected before the clock
	}
	for i, step := range steps[:len(steps)-1] {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := steps[len(steps)-1](); err == nil {
		t.Error("On with an unknown kind succeeded")
	}
	if diff := cmp.Diff([]history.FaultKind{history.FaultDropReplies}, p.Active()); diff != "" {
		t.Errorf("Active() (-want +got):\n%s", diff)
	}
	want := []history.Op{
		history.Fault(history.FaultLatency, "net latency 50ms±10ms", 10, 20),
		history.Fault(history.FaultLatency, "net latency 80ms", 20, 80),
		history.Fault(history.FaultPartition, "net partition", 30, 40),
		history.Fault(history.FaultDropReplies, "net drop-replies", 60, 80),
		history.Fault(history.FaultReset, "net reset", 70, 80),
		history.Fault(history.FaultDropReplies, "net drop-replies", 90, history.NoReturn),
	}
	if diff := cmp.Diff(want, p.Windows()); diff != "" {
		t.Errorf("Windows() (-want +got):\n%s", diff)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want[5].Return = 100
	if diff := cmp.Diff(want, p.Windows()); diff != "" {
		t.Errorf("Windows() after Close (-want +got):\n%s", diff)
	}
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	echo := startEcho(t)
	p, err := New(t.Context(), echo.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "hello", time.Second); err != nil || got != "hello" {
		t.Fatalf("echo through the proxy = %q, %v", got, err)
	}
	if err := p.Partition(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	for name, f := range map[string]func() error{
		"Reset": p.Reset, "Heal": p.Heal, "Off": func() error { return p.Off(history.FaultReset) },
		"Latency": func() error { return p.Latency(time.Millisecond, 0) },
	} {
		if err := f(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if ws := p.Windows(); len(ws) != 1 || ws[0].Return == history.NoReturn {
		t.Errorf("Windows() after Close = %+v, want one closed window", ws)
	}
	if _, err := roundTrip(c, "x", time.Second); err == nil {
		t.Error("a proxied connection survived Close")
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c2.Close()
		t.Error("the proxy still accepts connections after Close")
	}
}

func TestInject(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.Addr(), Options{})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	start := time.Now()
	if err := p.Inject(t.Context(), chaos.Fault{Kind: history.FaultLatency, Latency: 30 * time.Millisecond, Duration: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Inject returned after %s, want at least 300ms", d)
	}
	if len(p.Active()) != 0 {
		t.Errorf("Active() after Inject = %v, want none", p.Active())
	}
	ws := p.Windows()
	if len(ws) != 1 || ws[0].Return-ws[0].Call < int64(300*time.Millisecond) {
		t.Errorf("Windows() = %+v, want one closed window of at least 300ms", ws)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Inject(ctx, chaos.Fault{Kind: history.FaultPartition, Duration: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("Inject with a cancelled context = %v, want context.Canceled", err)
	}
	if len(p.Active()) != 0 {
		t.Errorf("Active() after a cut-short Inject = %v, want none", p.Active())
	}
	if err := p.Inject(t.Context(), chaos.Fault{Kind: history.FaultLatency, Duration: time.Second}); err == nil {
		t.Error("Inject with an invalid fault succeeded")
	}
}

// TestFaultsOnEcho checks each fault's effect on plain TCP, with no
// database: the echo server counts what reaches it.
func TestFaultsOnEcho(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.Addr(), Options{})
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	waitReceived := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); echo.received() < want && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if got := echo.received(); got != want {
			t.Fatalf("upstream received %d bytes, want %d", got, want)
		}
	}

	c := dial()
	if _, err := roundTrip(c, "ping", time.Second); err != nil {
		t.Fatal(err)
	}
	waitReceived(4)

	// Drop replies: the request arrives, the reply does not.
	if err := p.DropRepliesAfterApply(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, "apply", 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("round trip with replies dropped = %v, want a time-out", err)
	}
	waitReceived(9)
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, "x", time.Second); err == nil {
		t.Error("a connection that lost replies survived the end of the fault")
	}

	// Partition: nothing arrives, nothing comes back, nothing is closed.
	c = dial()
	if _, err := roundTrip(c, "ok", time.Second); err != nil {
		t.Fatal(err)
	}
	base := echo.received() // the "x" above may or may not have arrived
	if err := p.Partition(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, "lost", 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("round trip across a partition = %v, want a time-out", err)
	}
	time.Sleep(50 * time.Millisecond)
	waitReceived(base)
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}

	// Reset: the connection fails at once and the bytes never arrive.
	c = dial()
	if _, err := roundTrip(c, "ok", time.Second); err != nil {
		t.Fatal(err)
	}
	waitReceived(base + 2)
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := roundTrip(c, "nope", 2*time.Second); err == nil || isTimeout(err) {
		t.Errorf("round trip during a reset = %v, want a connection error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("reset took %s to fail the round trip", d)
	}
	c = dial() // a connection opened during the window fails too
	if _, err := roundTrip(c, "nope", 2*time.Second); err == nil || isTimeout(err) {
		t.Errorf("round trip on a new connection during a reset = %v, want a connection error", err)
	}
	time.Sleep(50 * time.Millisecond)
	waitReceived(base + 2)
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}

	// Latency: the echo comes back late.
	c = dial()
	if err := p.Latency(300*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := roundTrip(c, "slow", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("round trip with 300ms latency took %s", d)
	}
	if err := p.Off(history.FaultLatency); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := roundTrip(c, "fast", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("round trip after the latency ended took %s", d)
	}
}
