package netfault

import (
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
)

// TestAbandonedRepliesLeaveNothing: clients that close their connection
// while delayed replies are queued must not leave goroutines behind or make
// Heal hang (toxiproxy's own latency toxic does both).
func TestAbandonedRepliesLeaveNothing(t *testing.T) {
	echo := startEcho(t)
	old := guardStallTimeout
	guardStallTimeout = 200 * time.Millisecond // read once, by New
	p := newProxy(t, echo.Addr(), Options{})
	guardStallTimeout = old
	// Count goroutines once a round trip has gone through: toxiproxy starts
	// one of its own goroutines only after Start has returned.
	keep, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	if _, err := roundTrip(keep, "warm", time.Second); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	if err := p.Latency(30*time.Millisecond, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	for range 10 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(c, big); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		c.Close() // about 1 MiB of echo still on its way
	}
	start := time.Now()
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Heal took %s", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the clients left, %d before they came:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}

	if got, err := roundTrip(keep, "still works", time.Second); err != nil || got != "still works" {
		t.Errorf("round trip after abandoned replies = %q, %v", got, err)
	}
}

// TestLatencyKeepsOrderAndChangesInPlace checks that delayed replies keep
// their bytes and order, and that a new delay applies to queued replies.
func TestLatencyKeepsOrderAndChangesInPlace(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.Addr(), Options{Seed: 1})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := p.Latency(20*time.Millisecond, 15*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 200 {
		msg := strings.Repeat(string(rune('a'+i%26)), 1+i%50)
		want.WriteString(msg)
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, want.Len())
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatal("delayed echo differs from what was sent")
	}

	// A reply queued under a one-hour delay goes out when the delay drops.
	if err := p.Latency(time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "held"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := p.Latency(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Errorf("reply held by a changed latency = %q, %v", buf, err)
	}
	if ws := p.Windows(); len(ws) != 3 || ws[2].Return != history.NoReturn || ws[1].Return == history.NoReturn {
		t.Errorf("Windows() = %+v, want three latency windows, the last open", ws)
	}
}
