package consume_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/consume"
)

// TestLimits: every input beyond its documented limit is refused with
// ErrConfig naming the field, before Run connects to anything (the URL
// points nowhere), and every limit itself is accepted.
func TestLimits(t *testing.T) {
	base := func(set func(*consume.Config)) consume.Config {
		c := consume.Config{Broker: consume.RabbitMQ, URL: "amqp://127.0.0.1:1/"}
		set(&c)
		return c
	}
	refused := []struct {
		name, field string
		set         func(*consume.Config)
	}{
		{"messages", "Messages", func(c *consume.Config) { c.Messages = consume.MaxMessages + 1 }},
		{"messages far above", "Messages", func(c *consume.Config) { c.Messages = 100_000_000 }},
		{"negative messages", "Messages", func(c *consume.Config) { c.Messages = -1 }},
		{"consumers", "Consumers", func(c *consume.Config) { c.Consumers = 100_000 }},
		{"worker processes", "Consumers", func(c *consume.Config) {
			c.Consumers, c.Processes, c.WorkerCommand = consume.MaxProcesses+1, true, workerCommand
		}},
		{"prefetch", "Prefetch", func(c *consume.Config) { c.Prefetch = consume.MaxPrefetch + 1 }},
		{"poison", "Poison", func(c *consume.Config) { c.Poison = consume.MaxMessages + 1 }},
		{"crashes", "CrashBeforeAck", func(c *consume.Config) { c.Faults.CrashBeforeAck = consume.MaxCrashes + 1 }},
		{"pauses", "Pause", func(c *consume.Config) { c.Faults.Pause = consume.MaxPauses + 1 }},
		{"overlaps", "Overlap", func(c *consume.Config) { c.Faults.Overlap = consume.MaxOverlaps + 1 }},
		{"restarts", "Restarts", func(c *consume.Config) { c.Faults.Restarts = 100_000 }},
		{"negative restarts", "Restarts", func(c *consume.Config) { c.Faults.Restarts = -1 }},
		{"in-process restarts beyond the consumers", "restarts", func(c *consume.Config) { c.Consumers, c.Faults.Restarts = 2, 3 }},
		{"negative latency", "Latency", func(c *consume.Config) { c.Latency = -time.Millisecond }},
		{"latency", "Latency", func(c *consume.Config) { c.Latency = consume.MaxLatency + 1 }},
		{"negative timeout", "Timeout", func(c *consume.Config) { c.Timeout = -time.Second }},
		{"timeout", "Timeout", func(c *consume.Config) { c.Timeout = consume.MaxTimeout + 1 }},
		{"lease", "LeaseTTL", func(c *consume.Config) { c.LeaseTTL = consume.MaxLeaseTTL + 1 }},
		{"ack wait", "AckWait", func(c *consume.Config) { c.AckWait = -1 }},
		{"requeue delay", "RequeueDelay", func(c *consume.Config) { c.RequeueDelay = consume.MaxRequeueDelay + 1 }},
		{"pause length", "PauseFor", func(c *consume.Config) { c.Faults.PauseFor = consume.MaxPauseFor + 1 }},
		{"batch linger", "BatchLinger", func(c *consume.Config) { c.BatchLinger = consume.MaxBatchLinger + 1 }},
		{"duplicate rate NaN", "DuplicateRate", func(c *consume.Config) { c.DuplicateRate = math.NaN() }},
		{"duplicate rate above 1", "DuplicateRate", func(c *consume.Config) { c.DuplicateRate = 1.5 }},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base(tt.set)
			if err := cfg.Validate(); !errors.Is(err, consume.ErrConfig) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate: %v, want ErrConfig naming %s", err, tt.field)
			}
			start := time.Now()
			_, err := consume.Run(context.Background(), cfg)
			if !errors.Is(err, consume.ErrConfig) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Run: %v, want ErrConfig naming %s", err, tt.field)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("Run took %s to refuse the configuration", took)
			}
		})
	}
	atLimit := base(func(c *consume.Config) {
		c.Messages, c.Consumers, c.Prefetch, c.Latency, c.Timeout = consume.MaxMessages, consume.MaxConsumers, consume.MaxPrefetch, consume.MaxLatency, consume.MaxTimeout
		c.Faults = consume.Faults{CrashBeforeAck: consume.MaxCrashes, Pause: consume.MaxPauses, Overlap: consume.MaxOverlaps, Restarts: consume.MaxRestarts,
			PauseFor: consume.MaxPauseFor}
		c.LeaseTTL, c.AckWait, c.RequeueDelay, c.DuplicateRate = consume.MaxLeaseTTL, consume.MaxAckWait, consume.MaxRequeueDelay, 1
	})
	if err := atLimit.Validate(); err != nil {
		t.Errorf("every input at its limit: %v", err)
	}
}
