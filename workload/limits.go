package workload

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Limits on a Config, checked by Check and Run before anything starts. They
// bound what one run may ask of the machine and reject values that can only
// be mistakes; the package doc has the table. Zero keeps its meaning of
// "the default" wherever a field documents one.
const (
	// MaxDuration bounds Config.Duration.
	MaxDuration = 24 * time.Hour
	// MaxRequests bounds Config.Requests.
	MaxRequests = 100_000_000
	// MaxClients bounds Config.Clients: each client is a goroutine with
	// its own state, and ten thousand concurrent callers already saturate
	// any single backend.
	MaxClients = 10_000
	// MaxRate bounds Config.Rate, in requests per second.
	MaxRate = 1_000_000
	// MaxWait bounds every other wait of a run: LateAfter, DrainTimeout,
	// Keys.Delay, the Retry durations, the Business latencies and
	// Engine.ConflictWait.
	MaxWait = 10 * time.Minute
	// MinLeaseTTL and MaxLeaseTTL bound a set Engine.LeaseTTL. Below a few
	// milliseconds a lease expires while its holder is still being
	// scheduled, so every execution is taken over and the run measures the
	// machine's scheduler, not the engine.
	MinLeaseTTL = 10 * time.Millisecond
	MaxLeaseTTL = 24 * time.Hour
	// MinHeartbeat is the shortest set Engine.Heartbeat interval.
	MinHeartbeat = time.Millisecond
	// MinRetention and MaxRetention bound a set Engine.Retention.
	MinRetention = time.Second
	MaxRetention = 30 * 24 * time.Hour
	// MaxCopies bounds Keys.Concurrent and Keys.Delayed.
	MaxCopies = 100
	// MaxKeySpace bounds Keys.Space.
	MaxKeySpace = 1_000_000_000
	// MaxZipfS bounds Keys.ZipfS.
	MaxZipfS = 10
	// MaxAttempts bounds Retry.MaxAttempts.
	MaxAttempts = 1_000
	// MinTimeout is the shortest set Retry.Timeout: each timeout leaves its
	// call running on its own goroutine while the client retries.
	MinTimeout = time.Millisecond
	// MaxClientBase bounds Config.ClientBase.
	MaxClientBase = 1_000_000
	// MaxBatch bounds Config.Batch: a batch's leases all wait for the
	// batch's slowest function, so a long batch only measures lease expiry.
	MaxBatch = 1_000
)

// FieldError is a configuration error about one field. It wraps ErrConfig.
type FieldError struct {
	// Field names the field as a scenario file spells it: "duration",
	// "clients", "rate", "keys.space", "retry.timeout",
	// "business.latency.mean", "engine.lease_ttl", and so on (Config
	// fields that no scenario sets use their name in the same style:
	// "late_after", "drain_timeout", "client_base", "keys.prefix").
	Field string
	// Problem says what is wrong with the value, naming the limit it
	// breaks, e.g. "10000000 is above the limit of 10000".
	Problem string
}

// Error returns "workload: invalid configuration: FIELD: PROBLEM".
func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrConfig, e.Field, e.Problem)
}

// Unwrap returns ErrConfig.
func (e *FieldError) Unwrap() error { return ErrConfig }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// limits checks the fields with a documented limit, on the values as set
// (before defaults).
func (c *Config) limits() error {
	duration := between("duration", c.Duration, 1, MaxDuration, "positive")
	if c.Requests > 0 {
		duration = between("duration", c.Duration, 0, MaxDuration, "at least 0")
	}
	checks := []error{
		duration,
		intRange("requests", c.Requests, 0, MaxRequests),
		intRange("clients", c.Clients, 0, MaxClients),
		fraction("rate", c.Rate, MaxRate),
		atMost("late_after", c.LateAfter, MaxWait),
		atMost("drain_timeout", c.DrainTimeout, MaxWait),
		intRange("client_base", c.ClientBase, 0, MaxClientBase),
		intRange("batch", c.Batch, 0, MaxBatch),
		intRange("keys.space", c.Keys.Space, 0, MaxKeySpace),
		finite("keys.zipf_s", c.Keys.ZipfS, MaxZipfS),
		intRange("keys.concurrent", c.Keys.Concurrent, 0, MaxCopies),
		intRange("keys.delayed", c.Keys.Delayed, 0, MaxCopies),
		between("keys.delay", c.Keys.Delay, 0, MaxWait, "at least 0"),
		fraction("keys.dup_fraction", c.Keys.DupFraction, 1),
		fraction("keys.mismatch_rate", c.Keys.MismatchRate, 1),
		intRange("retry.max_attempts", c.Retry.MaxAttempts, 0, MaxAttempts),
		optional("retry.timeout", c.Retry.Timeout, MinTimeout, MaxWait),
		atMost("retry.backoff", c.Retry.Backoff, MaxWait),
		atMost("retry.max_backoff", c.Retry.MaxBackoff, MaxWait),
		fraction("retry.jitter", c.Retry.Jitter, 1),
		between("business.latency.mean", c.Business.Latency.Mean, 0, MaxWait, "at least 0"),
		between("business.latency.min", c.Business.Latency.Min, 0, MaxWait, "at least 0"),
		between("business.latency.max", c.Business.Latency.Max, 0, MaxWait, "at least 0"),
		fraction("business.retryable_rate", c.Business.RetryableRate, 1),
		fraction("business.permanent_rate", c.Business.PermanentRate, 1),
		fraction("business.ambiguous_rate", c.Business.AmbiguousRate, 1),
		optional("engine.lease_ttl", c.Engine.LeaseTTL, MinLeaseTTL, MaxLeaseTTL),
		between("engine.conflict_wait", c.Engine.ConflictWait, 0, MaxWait, "at least 0"),
		between("engine.clock_skew", c.Engine.ClockSkew, 0, MaxWait, "at least 0"),
		optional("engine.retention", c.Engine.Retention, MinRetention, MaxRetention),
	}
	if c.Engine.Heartbeat > 0 {
		checks = append(checks, between("engine.heartbeat", c.Engine.Heartbeat, MinHeartbeat, MaxLeaseTTL, "at least "+MinHeartbeat.String()))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return c.Completer.limits()
}

// between checks lo <= d <= hi; low describes lo in the error.
func between(field string, d, lo, hi time.Duration, low string) error {
	switch {
	case d < lo:
		return fieldErr(field, "%s must be %s", d, low)
	case d > hi:
		return fieldErr(field, "%s is above the limit of %s", d, hi)
	}
	return nil
}

// atMost checks d <= hi (a negative d keeps its documented meaning).
func atMost(field string, d, hi time.Duration) error {
	if d > hi {
		return fieldErr(field, "%s is above the limit of %s", d, hi)
	}
	return nil
}

// optional checks that d is zero (the default) or in [lo, hi].
func optional(field string, d, lo, hi time.Duration) error {
	if d == 0 {
		return nil
	}
	return intRange(field, d, lo, hi)
}

// intRange checks that n, an integer or a time.Duration, is in [lo, hi]:
// a negative n is said to be negative, whatever lo is. Values print with
// %v: a duration as 1.5s, an integer in decimal.
func intRange[T ~int | ~int64](field string, n, lo, hi T) error {
	switch {
	case n < 0:
		return fieldErr(field, "%v is negative", n)
	case n < lo:
		return fieldErr(field, "%v is below the minimum of %v", n, lo)
	case n > hi:
		return fieldErr(field, "%v is above the limit of %v", n, hi)
	}
	return nil
}

// fraction checks that x is a number in [0, hi].
func fraction(field string, x, hi float64) error {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fieldErr(field, "%s is not a finite number", fmtNum(x))
	case x < 0:
		return fieldErr(field, "%s is negative", fmtNum(x))
	case x > hi:
		return fieldErr(field, "%s is above the limit of %s", fmtNum(x), fmtNum(hi))
	}
	return nil
}

// finite checks that x is a finite number at most hi (other rules on it
// are the caller's).
func finite(field string, x, hi float64) error {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fieldErr(field, "%s is not a finite number", fmtNum(x))
	case x > hi:
		return fieldErr(field, "%s is above the limit of %s", fmtNum(x), fmtNum(hi))
	}
	return nil
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Validate reports the first rule or limit the shape of c breaks (see
// Check), or nil. It does not look at Store, Sink, Faults or Recorder.
func (c Config) Validate() error {
	_, err := c.shape()
	return err
}
