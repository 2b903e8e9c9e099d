package consume

import (
	"fmt"
	"math"
	"time"
)

// Limits of a Config. Run refuses a Config beyond one of them with an
// error that wraps ErrConfig and names the field and the limit, before it
// connects to anything; Config.Validate makes the same check. They keep a
// run's memory (the whole history is kept until it is checked), its
// connections and its length within what one machine does in a few
// minutes: 100000 messages hold a few hundred MB of history.
const (
	// MaxMessages is the largest Config.Messages.
	MaxMessages = 100_000
	// MaxConsumers is the largest Config.Consumers, MaxProcesses the
	// largest with Config.Processes (one worker process each).
	MaxConsumers = 256
	MaxProcesses = 64
	// MaxPrefetch is the largest Config.Prefetch.
	MaxPrefetch = 1000
	// MaxBatch is the largest Config.Batch, MaxBatchLinger the largest
	// Config.BatchLinger.
	MaxBatch       = 500
	MaxBatchLinger = time.Second
	// MaxCrashes, MaxPauses and MaxOverlaps are the largest
	// Faults.CrashBeforeAck, Faults.Pause and Faults.Overlap; together
	// with Config.Poison they need as many distinct messages.
	MaxCrashes  = 1000
	MaxPauses   = 100
	MaxOverlaps = 1000
	// MaxRestarts is the largest Faults.Restarts. In-process consumers
	// restart once each, so without Processes Restarts is at most
	// Consumers.
	MaxRestarts = 100
	// MaxLatency is the largest Config.Latency.
	MaxLatency = time.Minute
	// MaxTimeout is the largest Config.Timeout.
	MaxTimeout = 24 * time.Hour
	// MaxLeaseTTL and MaxAckWait are the largest Config.LeaseTTL and
	// Config.AckWait, MaxRequeueDelay the largest Config.RequeueDelay and
	// MaxPauseFor the largest Faults.PauseFor.
	MaxLeaseTTL     = time.Hour
	MaxAckWait      = time.Hour
	MaxRequeueDelay = time.Minute
	MaxPauseFor     = 10 * time.Minute
)

// Validate reports whether Run would accept c, without connecting to
// anything: nil, or the error Run would return (wrapping ErrConfig). A
// zero field takes its default, as in Run.
func (c Config) Validate() error { return c.withDefaults() }

// checkLimits checks every field of c against its limit (zero fields are
// the defaults and pass).
func (c *Config) checkLimits() error {
	f := &c.Faults
	counts := []struct {
		name    string
		v, max  int
		minimum int
	}{
		{"Messages", c.Messages, MaxMessages, 0},
		{"Consumers", c.Consumers, MaxConsumers, 0},
		{"Prefetch", c.Prefetch, MaxPrefetch, 0},
		{"Batch", c.Batch, MaxBatch, 0},
		{"Poison", c.Poison, MaxMessages, 0},
		{"Faults.CrashBeforeAck", f.CrashBeforeAck, MaxCrashes, 0},
		{"Faults.Pause", f.Pause, MaxPauses, 0},
		{"Faults.Overlap", f.Overlap, MaxOverlaps, 0},
		{"Faults.Restarts", f.Restarts, MaxRestarts, 0},
	}
	for _, n := range counts {
		if n.v < n.minimum || n.v > n.max {
			return fmt.Errorf("%w: %s %d: want %d to %d", ErrConfig, n.name, n.v, n.minimum, n.max)
		}
	}
	if c.Processes && c.Consumers > MaxProcesses {
		return fmt.Errorf("%w: Consumers %d: want at most %d with Processes (one worker process each)", ErrConfig, c.Consumers, MaxProcesses)
	}
	durations := []struct {
		name   string
		v, max time.Duration
	}{
		{"BatchLinger", c.BatchLinger, MaxBatchLinger},
		{"Latency", c.Latency, MaxLatency},
		{"LeaseTTL", c.LeaseTTL, MaxLeaseTTL},
		{"AckWait", c.AckWait, MaxAckWait},
		{"RequeueDelay", c.RequeueDelay, MaxRequeueDelay},
		{"Faults.PauseFor", f.PauseFor, MaxPauseFor},
		{"Timeout", c.Timeout, MaxTimeout},
	}
	for _, d := range durations {
		if d.v < 0 || d.v > d.max {
			return fmt.Errorf("%w: %s %s: want 0 to %s", ErrConfig, d.name, d.v, d.max)
		}
	}
	if math.IsNaN(c.DuplicateRate) || c.DuplicateRate > 1 {
		return fmt.Errorf("%w: DuplicateRate %g: want at most 1 (negative: none)", ErrConfig, c.DuplicateRate)
	}
	return nil
}
