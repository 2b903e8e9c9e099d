// Package scenarios is the catalog of named harness runs and its strict
// loader. A scenario is a YAML file that sets the engine options (lease TTL,
// heartbeat, conflict wait), the workload shape (clients, rate, keys, retry
// policy, business function) and the fault schedule of a run, and its
// default duration. The built-in scenarios are embedded in the binary
// (Names, Builtin); users can write their own and load them with LoadFile.
//
// The loader is strict: an unknown field is an error that names the field
// and its line, and every value is validated (see Parse).
package scenarios

import (
	"fmt"
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
	Engine workload.Engine
	// Clients, Rate, Keys, Retry and Business shape the workload.
	Clients  int
	Rate     float64
	Keys     workload.Keys
	Retry    workload.Retry
	Business workload.Business
	// Faults is the fault schedule, with windows as fractions of the
	// traffic phase so that it scales with the duration.
	Faults []Fault
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

// Fault is a fault of the schedule whose window is given as fractions of
// the run's traffic phase.
type Fault struct {
	chaos.Fault
	// From and Until bound the window, as fractions in [0, 1] of the
	// traffic duration (Until zero means 1).
	From, Until float64
}

// Workload returns the workload configuration of the scenario for a run of
// duration d (zero means the scenario's Duration). Store, Sink, Faults,
// Recorder and Seed are the caller's to set.
func (s *Scenario) Workload(d time.Duration) workload.Config {
	if d <= 0 {
		d = s.Duration
	}
	return workload.Config{
		Duration: d,
		Clients:  s.Clients,
		Rate:     s.Rate,
		Keys:     s.Keys,
		Retry:    s.Retry,
		Business: s.Business,
		Engine:   s.Engine,
	}
}

// ChaosConfig returns the fault schedule for a run of duration d (zero
// means the scenario's Duration), for chaos.New. Now is the caller's.
func (s *Scenario) ChaosConfig(seed int64, d time.Duration) chaos.Config {
	if d <= 0 {
		d = s.Duration
	}
	cfg := chaos.Config{Seed: seed, RunFor: d}
	for _, f := range s.Faults {
		cf := f.Fault
		cf.Start = time.Duration(f.From * float64(d))
		until := f.Until
		if until == 0 {
			until = 1
		}
		cf.End = time.Duration(until * float64(d))
		if cf.End <= cf.Start {
			cf.End = cf.Start + 1
		}
		cfg.Faults = append(cfg.Faults, cf)
	}
	return cfg
}

// String returns the scenario's name and source.
func (s *Scenario) String() string { return fmt.Sprintf("%s (%s)", s.Name, s.Source) }
