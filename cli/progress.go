package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/idembench/idembench/harness"
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
	// Calls counts the calls recorded so far (not the effects or lease
	// operations the history also holds).
	Calls int
	// Doubled counts keys with more than one applied effect: each is an
	// at-most-once (I1) violation the checker will report.
	Doubled int
	// P99 is the 99th percentile latency of the calls that returned since
	// the last line, to within 6.25% (workload.LiveLatency); zero when
	// none returned or latencies are not observed.
	P99 time.Duration
}

// progress reports a run's progress on w (stderr): a line redrawn in place
// on a terminal, cleared at the end, or plain log lines every progressLog
// otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	label string
	// live holds the latencies of the calls since the last line; nil
	// until Latency is called, which must happen before Watch.
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

// Latency returns the histogram the workload should observe its calls
// into (workload.Config.Live) for the progress line's p99.
func (p *progress) Latency() *workload.LiveLatency {
	if p.live == nil {
		p.live = new(workload.LiveLatency)
	}
	return p.live
}

// Watch shows the progress of a workload whose figures sample returns,
// with a traffic phase of the given length, until the returned stop is
// called; stop clears the terminal line and returns once the reporting
// goroutine has finished. The p99 comes from Latency's histogram.
func (p *progress) Watch(sample func() harness.LiveStats, traffic time.Duration) (stop func()) {
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
				s := sample()
				p.tick(p.now(), liveStats{Calls: s.Calls, Doubled: s.Doubled})
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}

var _ harness.Progress = (*progress)(nil)

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
	p.last, p.lastCalls = now, s.Calls
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
		rate = float64(s.Calls-p.lastCalls) / dt
	}
	phase := fmt.Sprintf("%s / %s", elapsed.Truncate(100*time.Millisecond), p.traffic)
	if elapsed > p.traffic {
		phase = fmt.Sprintf("%s · drain and liveness probe", elapsed.Truncate(100*time.Millisecond))
	}
	line := fmt.Sprintf("%s · %.0f calls/s · %d calls", phase, rate, s.Calls)
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
