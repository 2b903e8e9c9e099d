package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
)

// TestProgressLines drives the progress reporter with an injected clock:
// off a terminal it logs one plain line every 5 s; on a terminal it redraws
// one line in place at every tick and clears it at the end.
func TestProgressLines(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		tty       bool
		ticks     int // one every 250 ms, for 12 s
		wantLines int // newline-terminated lines
		wantDraws int // in-place redraws
		contains  []string
	}{
		{"plain", false, 48, 2, 0, []string{"idembench: 5s / 10s · 200 calls/s · 1000 calls", "10s / 10s", "no double execution so far"}},
		{"terminal", true, 48, 0, 48, []string{"\r\x1b[K", "calls/s", "drain and liveness probe", "3 keys double-applied so far"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			p := &progress{w: &b, tty: c.tty, now: func() time.Time { return t0 }}
			p.begin(t0, 10*time.Second)
			for i := 1; i <= c.ticks; i++ {
				// 50 calls per tick: 200 calls/s.
				s := liveStats{Calls: 50 * i}
				if i > 40 {
					s.Doubled = 3
				}
				p.tick(t0.Add(time.Duration(i)*progressRedraw), s)
			}
			p.end()
			got := b.String()
			if n := strings.Count(got, "\n"); n != c.wantLines {
				t.Errorf("%d lines, want %d:\n%q", n, c.wantLines, got)
			}
			if n := strings.Count(got, "\r\x1b[K"); n != c.wantDraws+boolToInt(c.tty) {
				t.Errorf("%d redraws, want %d (plus the final clear)", n, c.wantDraws)
			}
			if c.tty && !strings.HasSuffix(got, "\r\x1b[K") {
				t.Errorf("the terminal line is not cleared at the end: %q", got[max(0, len(got)-40):])
			}
			for _, want := range c.contains {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%q", want, got)
				}
			}
		})
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProgressP99 checks that a line shows the p99 of the calls observed
// since the previous line, and none when no call returned.
func TestProgressP99(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	p := &progress{w: &b, tty: false, now: func() time.Time { return t0 }}
	live := p.Latency()
	p.begin(t0, 10*time.Second)
	for i := range 200 {
		d := 2 * time.Millisecond
		if i < 4 { // 2% of the calls are slow: the p99 is one of them
			d = 300 * time.Millisecond
		}
		live.Observe(d)
	}
	p.tick(t0.Add(progressLog), liveStats{Calls: 200})
	p.tick(t0.Add(2*progressLog), liveStats{Calls: 200})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", b.String())
	}
	if !strings.Contains(lines[0], "p99 311.3") { // 300 ms: the middle of its bucket
		t.Errorf("first line lacks the p99 of its window (300 ms): %q", lines[0])
	}
	if strings.Contains(lines[1], "p99") {
		t.Errorf("second line shows a p99 although no call returned since the first: %q", lines[1])
	}
}

// TestProgressWatchStops: Watch's goroutine ends when stop is called (the
// package's goleak check would catch it otherwise), and --no-progress
// shows nothing.
func TestProgressWatchStops(t *testing.T) {
	if newProgress(io.Discard, true, "") != nil {
		t.Fatal("--no-progress still shows progress")
	}
	var b strings.Builder
	p := &progress{w: &b, tty: true, now: time.Now}
	stop := p.Watch(func() harness.LiveStats { return harness.LiveStats{Ops: 10} }, time.Second)
	time.Sleep(3 * progressRedraw / 2)
	stop()
	stop() // idempotent
	if got := b.String(); !strings.Contains(got, "calls/s") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Fatalf("want one drawn line, cleared: %q", got)
	}
}
