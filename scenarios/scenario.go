// Package scenarios is the catalog of named harness runs and its strict
// loader. A scenario is a YAML file that sets the engine options (lease TTL,
// heartbeat, conflict wait), the workload shape (clients, rate, keys, retry
// policy, business function) and the fault schedule of a run, and its
// default duration. The built-in scenarios are embedded in the binary
// (Names, Builtin); users can write their own and load them with LoadFile.
//
// The loader is strict: an unknown field is an error that names the field
// and its line, and every value is validated (see Parse).
//
// # Limits
//
// Every field has a documented range. A value outside it is an error that
// wraps ErrInvalid and names the line, the field and the limit, e.g.
// "line 12: workload.clients: 10000000 is above the limit of 10000". An
// integer field holding 3.5 is an error, never truncated; NaN and
// infinities are errors wherever a number is expected.
//
//	field                              limit
//	(file)                             at most 1 MiB (MaxFileSize), one YAML document
//	name                               required, at most 100 bytes (MaxNameLen), no control characters
//	duration                           > 0, at most 24h (workload.MaxDuration)
//	engine.lease_ttl                   required, 10ms to 24h (workload.MinLeaseTTL, MaxLeaseTTL)
//	engine.heartbeat                   on, off, or an interval of at least 1ms below the lease TTL
//	engine.retention                   absent (the engine's default) or 1s to 30 days
//	engine.conflict_wait               at most 10m (workload.MaxWait)
//	engine.clock_skew                  at most 10m (workload.MaxWait)
//	completer.count                    1 to 100 (workload.MaxCompleters) when completer is written
//	completer.every                    required there, 1ms to 10m (workload.MinCompleterEvery, MaxWait)
//	completer.older_than               at most 10m
//	workload.clients                   absent (16) or 1 to 10,000 (workload.MaxClients); 0 is an error
//	workload.rate                      0 (closed loop) to 1,000,000 requests/s
//	workload.batch                     0 or 1 (one call per delivery) to 1,000 (workload.MaxBatch); not with retry.timeout
//	workload.keys.space                at most 1,000,000,000
//	workload.keys.zipf_s               above 1, at most 10
//	workload.keys.concurrent, delayed  0 to 100 copies each
//	workload.keys.delay                at most 10m
//	workload.retry.max_attempts        0 (one) to 1,000
//	workload.retry.timeout             0 (none) or 1ms to 10m
//	workload.retry.backoff, max_backoff at most 10m
//	workload.business.latency.*        at most 10m
//	fractions, rates, jitter           finite, in [0, 1]
//	faults                             at most 100 entries (MaxFaults)
//	faults[].duration (pause)          at most 10m (MaxPause)
//	faults[].count                     at most 10,000 (chaos.MaxCount) and 1,000 per second of the
//	                                   fault's window at the scenario's duration (chaos.MaxCountPerSecond)
//	faults[].probability               finite, in (0, 1]
//	thresholds.max_p99                 at most 24h
//	thresholds.min_throughput          finite, >= 0
//	thresholds.max_error_rate          finite, in [0, 1]
//
// Scenario.Apply checks a caller's overrides (command-line flags) against
// the same limits; chaos.New checks the fault counts again at the run's
// duration.
package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/workload"
)

// Scenario is a loaded, validated scenario.
type Scenario struct {
	// Name is the scenario's name: the built-in name, or the file's name
	// field.
	Name string
	// Description says what the scenario exercises and what a correct
	// engine must do.
	Description string
	// Duration is the default length of the traffic phase.
	Duration time.Duration
	// Engine is the engine configuration (Recovery is left to the caller).
	Engine workload.EngineSettings
	// Completer is the background completers of the run (none when its
	// Count is zero; Pass is left to the caller).
	Completer workload.Completer
	// Clients, Rate, Keys, Retry and Business shape the workload.
	Clients int
	Rate    float64
	Keys    workload.Keys
	// Batch, above 1, makes the clients consumers that send what they pull
	// in batches of this size with Engine.DoBatch (workload.Config.Batch).
	Batch    int
	Retry    workload.Retry
	Business workload.Business
	// Faults is the fault schedule of the engine: crashes and pauses,
	// with their windows at the scenario's Duration. The YAML gives each
	// window as fractions of the traffic phase ([from, until]), so it
	// scales with the duration: ChaosConfig and Apply rescale them to
	// another one.
	Faults []chaos.Fault
	// Thresholds are the scenario's performance limits; a run that misses
	// one exits 4. The command line overrides them one by one.
	Thresholds Thresholds
	// Source is where the scenario came from: "builtin:<name>" or a path.
	Source string
}

// Thresholds are performance limits; a zero field is not checked. They
// mean what the reports package's thresholds mean.
type Thresholds struct {
	// MaxP99 is the highest acceptable overall p99 latency.
	MaxP99 time.Duration
	// MinThroughput is the lowest acceptable throughput, in completed
	// calls per second.
	MinThroughput float64
	// MaxErrorRate is the highest acceptable fraction of calls that end
	// without a final answer, between 0 and 1.
	MaxErrorRate float64
}

// Workload returns the workload configuration of the scenario for a run of
// duration d (zero means the scenario's Duration). Store, Sink, Faults,
// Recorder and Seed are the caller's to set.
func (s *Scenario) Workload(d time.Duration) workload.Config {
	if d <= 0 {
		d = s.Duration
	}
	return workload.Config{
		Duration:  d,
		Clients:   s.Clients,
		Rate:      s.Rate,
		Batch:     s.Batch,
		Keys:      s.Keys,
		Retry:     s.Retry,
		Business:  s.Business,
		Engine:    s.Engine,
		Completer: s.Completer,
	}
}

// ChaosConfig returns the fault schedule for a run of duration d (zero
// means the scenario's Duration), for chaos.New: each window scaled from
// the scenario's Duration to d. Now is the caller's.
func (s *Scenario) ChaosConfig(seed int64, d time.Duration) chaos.Config {
	if d <= 0 {
		d = s.Duration
	}
	return chaos.Config{Seed: seed, RunFor: d, Faults: scaleFaults(s.Faults, s.Duration, d)}
}

// scaleFaults returns faults with their windows, set for a run of length
// from, scaled to a run of length to; a window keeps at least 1ns. The
// same lengths give the same windows.
func scaleFaults(faults []chaos.Fault, from, to time.Duration) []chaos.Fault {
	out := slices.Clone(faults)
	if from == to || from <= 0 {
		return out
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / float64(from) * float64(to)) }
	for i := range out {
		f := &out[i]
		f.Start, f.End = scale(f.Start), scale(f.End)
		if f.End <= f.Start {
			f.End = f.Start + 1
		}
	}
	return out
}

// String returns the scenario's name and source.
func (s *Scenario) String() string { return fmt.Sprintf("%s (%s)", s.Name, s.Source) }
