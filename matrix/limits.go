package matrix

import (
	"slices"
	"time"

	"github.com/idembench/idembench/harness"
)

// Limits of Options, checked by Validate before anything starts.
const (
	// MinDuration and MaxDuration bound a set Options.Duration (each
	// cell's traffic): below a tenth of a second the restarts and
	// pauses of a cell have no traffic to hit, and a matrix has dozens of
	// cells.
	MinDuration = 100 * time.Millisecond
	MaxDuration = time.Hour
	// MaxCheckTimeout bounds Options.CheckTimeout, as it bounds a run's.
	MaxCheckTimeout = time.Hour
)

// Backends lists the backends a matrix has cells on, in a fixed order.
var Backends = []harness.Backend{harness.Memory, harness.Redis, harness.Postgres, harness.DynamoDB, RabbitMQ, NATS}

// Faults lists the matrix's columns.
var Faults = []Fault{Crash, Pause, Dup, Net, Restart, Failover, CrashBeforeAck}

// Validate checks o before anything starts: an Engine with an Open
// function when any cell is a scenario cell (not a broker's); Backends and Faults from the lists above; Duration 0 (the
// scenarios') or MinDuration to MaxDuration; CheckTimeout 0 (the
// checker's default) or up to MaxCheckTimeout; a Seed harness.CheckSeed
// accepts. Errors wrap harness.ErrConfig and name the field.
func (o *Options) Validate() error {
	// Broker cells run consumers of their own; only scenario cells (any
	// backend but a broker, and the default list) need o.Engine.
	scenarioCells := len(o.Backends) == 0 || slices.ContainsFunc(o.Backends, func(b harness.Backend) bool { return !isBroker(b) })
	switch {
	case o.Engine.Open == nil && scenarioCells:
		return harness.ConfigError("matrix: Engine: an engine with an Open function is required")
	case o.Duration < 0 || o.Duration > 0 && (o.Duration < MinDuration || o.Duration > MaxDuration):
		return harness.ConfigError("matrix: Duration %s: want 0 (the scenarios') or %s to %s", o.Duration, MinDuration, MaxDuration)
	case o.CheckTimeout < 0 || o.CheckTimeout > MaxCheckTimeout:
		return harness.ConfigError("matrix: CheckTimeout %s: want 0 (the checker's default) or up to %s", o.CheckTimeout, MaxCheckTimeout)
	}
	if err := harness.CheckSeed(o.Seed); err != nil {
		return harness.ConfigError("matrix: Seed: %w", err)
	}
	for _, b := range o.Backends {
		if !slices.Contains(Backends, b) {
			return harness.ConfigError("matrix: Backends: %q is not one of %v", b, Backends)
		}
	}
	for _, f := range o.Faults {
		if !slices.Contains(Faults, f) {
			return harness.ConfigError("matrix: Faults: %q is not one of %v", f, Faults)
		}
	}
	return nil
}
