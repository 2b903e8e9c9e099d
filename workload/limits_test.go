package workload_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/workload"
)

// TestLimits: every limit of the package doc is enforced by Check and
// Validate with a *FieldError that names the field and the limit, and a
// value at the limit is accepted.
func TestLimits(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*workload.Config)
		field string // "" = valid
		want  string // substring of the problem
	}{
		{"clients at limit", func(c *workload.Config) { c.Clients = workload.MaxClients }, "", ""},
		{"batch at limit", func(c *workload.Config) { c.Batch = workload.MaxBatch }, "", ""},
		{"batch above limit", func(c *workload.Config) { c.Batch = workload.MaxBatch + 1 }, "batch", "1000"},
		{"negative batch", func(c *workload.Config) { c.Batch = -2 }, "batch", "negative"},
		{"batch with a client timeout", func(c *workload.Config) { c.Batch = 8; c.Retry.Timeout = time.Second }, "batch", "retry.timeout"},
		{"ten million clients", func(c *workload.Config) { c.Clients = 10_000_000 }, "clients", "10000"},
		{"negative rate", func(c *workload.Config) { c.Rate = -3 }, "rate", "negative"},
		{"NaN rate", func(c *workload.Config) { c.Rate = math.NaN() }, "rate", "not a finite number"},
		{"infinite rate", func(c *workload.Config) { c.Rate = math.Inf(1) }, "rate", "not a finite number"},
		{"rate above limit", func(c *workload.Config) { c.Rate = 2e6 }, "rate", "1000000"},
		{"rate at limit", func(c *workload.Config) { c.Rate = workload.MaxRate }, "", ""},
		{"lease 1ns", func(c *workload.Config) { c.Engine.LeaseTTL = time.Nanosecond }, "engine.lease_ttl", "10ms"},
		{"lease at minimum", func(c *workload.Config) { c.Engine.LeaseTTL = workload.MinLeaseTTL }, "", ""},
		{"lease of a year", func(c *workload.Config) { c.Engine.LeaseTTL = 365 * 24 * time.Hour }, "engine.lease_ttl", "24h"},
		{"heartbeat 1ns", func(c *workload.Config) { c.Engine.Heartbeat = time.Nanosecond }, "engine.heartbeat", "1ms"},
		{"retention 1ms", func(c *workload.Config) { c.Engine.Retention = time.Millisecond }, "engine.retention", "1s"},
		{"conflict wait a day", func(c *workload.Config) { c.Engine.ConflictWait = 24 * time.Hour }, "engine.conflict_wait", "10m"},
		{"duration of a week", func(c *workload.Config) { c.Duration = 7 * 24 * time.Hour }, "duration", "24h"},
		{"NaN dup fraction", func(c *workload.Config) { c.Keys.DupFraction = math.NaN() }, "keys.dup_fraction", "not a finite"},
		{"NaN mismatch rate", func(c *workload.Config) { c.Keys.MismatchRate = math.NaN() }, "keys.mismatch_rate", "not a finite"},
		{"NaN zipf s", func(c *workload.Config) { c.Keys = workload.Keys{Dist: "zipf", Space: 5, ZipfS: math.NaN()} }, "keys.zipf_s", "not a finite"},
		{"huge key space", func(c *workload.Config) { c.Keys = workload.Keys{Dist: "zipf", Space: 2_000_000_000} }, "keys.space", "1000000000"},
		{"a million copies", func(c *workload.Config) { c.Keys.Concurrent = 1_000_000 }, "keys.concurrent", "100"},
		{"delay of a day", func(c *workload.Config) { c.Keys.Delayed, c.Keys.Delay = 1, 24*time.Hour }, "keys.delay", "10m"},
		{"a million attempts", func(c *workload.Config) { c.Retry.MaxAttempts = 1_000_000 }, "retry.max_attempts", "1000"},
		{"timeout 1ns", func(c *workload.Config) { c.Retry.Timeout = time.Nanosecond }, "retry.timeout", "1ms"},
		{"negative timeout", func(c *workload.Config) { c.Retry.Timeout = -time.Second }, "retry.timeout", "negative"},
		{"NaN jitter", func(c *workload.Config) { c.Retry.Jitter = math.NaN() }, "retry.jitter", "not a finite"},
		{"backoff of a day", func(c *workload.Config) { c.Retry.Backoff = 24 * time.Hour }, "retry.backoff", "10m"},
		{"latency of an hour", func(c *workload.Config) {
			c.Business.Latency = workload.Latency{Dist: "fixed", Mean: time.Hour}
		}, "business.latency.mean", "10m"},
		{"NaN failure rate", func(c *workload.Config) { c.Business.RetryableRate = math.NaN() }, "business.retryable_rate", "not a finite"},
		{"requests with no duration", func(c *workload.Config) { c.Duration, c.Requests = 0, 50 }, "", ""},
		{"no duration, no requests", func(c *workload.Config) { c.Duration = 0 }, "duration", "positive"},
		{"negative requests", func(c *workload.Config) { c.Requests = -1 }, "requests", "negative"},
		{"requests above limit", func(c *workload.Config) { c.Requests = workload.MaxRequests + 1 }, "requests", "100000000"},
		{"drain of a day", func(c *workload.Config) { c.DrainTimeout = 24 * time.Hour }, "drain_timeout", "10m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := workload.Config{Duration: time.Second}
			c.mod(&cfg)
			_, err := workload.Check(cfg)
			if verr := cfg.Validate(); (verr == nil) != (err == nil) {
				t.Fatalf("Validate %v disagrees with Check %v", verr, err)
			}
			if c.field == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var fe *workload.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, workload.ErrConfig) {
				t.Fatalf("error %v, want a *FieldError wrapping ErrConfig", err)
			}
			if fe.Field != c.field || !strings.Contains(fe.Problem, c.want) {
				t.Fatalf("error %q: field %q problem %q, want field %q and a problem naming %q", err, fe.Field, fe.Problem, c.field, c.want)
			}
		})
	}
}
