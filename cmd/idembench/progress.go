package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// How often progress is shown: a terminal line is redrawn at most 4 times
// a second; elsewhere (a CI log, a file) one plain line every 5 s.
const (
	progressRedraw = 250 * time.Millisecond
	progressLog    = 5 * time.Second
)

// liveStats is what a running workload shows of itself.
type liveStats struct {
	// Ops counts the recorded operations so far: calls and effects.
	Ops int
	// Effects counts the effect attempts the sink saw (applied or
	// rejected): Ops - Effects approximates the calls made.
	Effects int
	// Doubled counts keys with more than one applied effect: each is an
	// at-most-once (I1) violation the checker will report.
	Doubled int
	// P99 is the 99th percentile latency of the calls that returned since
	// the last line, to within 6.25% (workload.LiveLatency); zero when
	// none returned or latencies are not observed.
	P99 time.Duration
}

// Calls estimates the calls recorded so far.
func (s liveStats) Calls() int { return max(0, s.Ops-s.Effects) }

// progress reports a run's progress on w (stderr): a line redrawn in place
// on a terminal, cleared at the end, or plain log lines every progressLog
// otherwise. A nil *progress shows nothing.
type progress struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	label string
	// live holds the latencies of the calls since the last line; nil
	// until liveLatency is called, which must happen before watch.
	live *workload.LiveLatency

	// Set by begin; read and written by the one goroutine of watch.
	start     time.Time
	traffic   time.Duration
	last      time.Time // last line shown
	lastCalls int
	shown     bool // a terminal line is on screen
}

// newProgress returns a progress reporter for w, or nil when off is set.
// It draws in place when w is a terminal.
func newProgress(w io.Writer, off bool, label string) *progress {
	if off {
		return nil
	}
	return &progress{w: w, tty: isTerminal(w), now: time.Now, label: label}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// liveLatency returns the histogram the workload should observe its calls
// into (workload.Config.Live) for the progress line's p99, or nil on a nil
// p.
func (p *progress) liveLatency() *workload.LiveLatency {
	if p == nil {
		return nil
	}
	if p.live == nil {
		p.live = new(workload.LiveLatency)
	}
	return p.live
}

// watch shows the progress of a workload recording into rec, whose sink
// keeps ledger (nil when the sink has none during the run: effects are
// then counted as calls), with a traffic phase of the given length, until the
// returned stop is called; stop clears the terminal line and returns once
// the reporting goroutine has finished. The p99 comes from liveLatency's
// histogram. On a nil p it does nothing.
func (p *progress) watch(rec *history.Recorder, ledger *workload.Ledger, traffic time.Duration) (stop func()) {
	if p == nil {
		return func() {}
	}
	sample := func() liveStats {
		if ledger == nil { // a sink whose ledger is read back after the run
			return liveStats{Ops: rec.Len()}
		}
		s := ledger.Stats()
		return liveStats{Ops: rec.Len(), Effects: s.Applied + s.Rejected, Doubled: s.Doubled}
	}
	p.begin(p.now(), traffic)
	every := progressRedraw
	if !p.tty {
		every = time.Second // lines are still spaced progressLog apart
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				p.end()
				return
			case <-t.C:
				p.tick(p.now(), sample())
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}

// begin starts a run's progress at now.
func (p *progress) begin(now time.Time, traffic time.Duration) {
	p.start, p.traffic, p.last, p.lastCalls, p.shown = now, traffic, now, 0, false
}

// tick shows s at now: always on a terminal, otherwise only when
// progressLog has passed since the last line.
func (p *progress) tick(now time.Time, s liveStats) {
	if !p.tty && now.Sub(p.last) < progressLog {
		return
	}
	if p.live != nil {
		_, s.P99 = p.live.Take(0.99)
	}
	line := p.line(now, s)
	p.last, p.lastCalls = now, s.Calls()
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K"+line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, "idembench: "+line)
}

// line describes s at now; the rate is over the time since the last line.
func (p *progress) line(now time.Time, s liveStats) string {
	elapsed := now.Sub(p.start)
	rate := 0.0
	if dt := now.Sub(p.last).Seconds(); dt > 0 {
		rate = float64(s.Calls()-p.lastCalls) / dt
	}
	phase := fmt.Sprintf("%s / %s", elapsed.Truncate(100*time.Millisecond), p.traffic)
	if elapsed > p.traffic {
		phase = fmt.Sprintf("%s · drain and liveness probe", elapsed.Truncate(100*time.Millisecond))
	}
	line := fmt.Sprintf("%s · %.0f calls/s · %d calls", phase, rate, s.Calls())
	if s.P99 > 0 {
		line += " · p99 " + msDur(float64(s.P99)/float64(time.Millisecond))
	}
	if s.Doubled > 0 {
		line += fmt.Sprintf(" · %d keys double-applied so far", s.Doubled)
	} else {
		line += " · no double execution so far"
	}
	if p.label != "" {
		line = p.label + " · " + line
	}
	return line
}

// end clears the terminal line.
func (p *progress) end() {
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
