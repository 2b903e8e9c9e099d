package workload_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// TestRunEndsWithContext: whatever the run is waiting for (a pause of
// 100,000 hours, long business work, a long client timeout, the pacer of
// a slow open loop), Run returns within 2 s of its context being cancelled,
// with the context's error.
func TestRunEndsWithContext(t *testing.T) {
	pause := func(t *testing.T) workload.Faults {
		in, err := chaos.New(chaos.Config{Seed: 1, RunFor: time.Hour, Faults: []chaos.Fault{
			{Kind: history.FaultPause, Duration: 100_000 * time.Hour, Probability: 1},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	cases := []struct {
		name   string
		faults func(*testing.T) workload.Faults
		shape  func(*workload.Config)
	}{
		{"pause of 100000h", pause, func(*workload.Config) {}},
		{"pause with client timeouts", pause, func(c *workload.Config) {
			c.Retry = workload.Retry{MaxAttempts: 5, Timeout: 10 * time.Millisecond}
		}},
		{"long business work", nil, func(c *workload.Config) {
			c.Business.Latency = workload.Latency{Dist: "fixed", Mean: workload.MaxWait}
		}},
		{"slow open loop", nil, func(c *workload.Config) { c.Rate = 0.001 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := workload.Config{
				Duration: time.Hour,
				Clients:  4,
				Store:    newStore(t, nil),
				Sink:     mustSink(t, "fenced"),
			}
			if c.faults != nil {
				cfg.Faults = c.faults(t)
			}
			c.shape(&cfg)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := workload.Run(ctx, cfg)
				done <- err
			}()
			time.Sleep(300 * time.Millisecond)
			cancel()
			cancelled := time.Now()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Run returned %v, want context.Canceled", err)
				}
				t.Logf("returned %s after cancel", time.Since(cancelled))
			case <-time.After(2 * time.Second):
				t.Fatal("Run did not return within 2 s of ctx cancel")
				<-done
			}
		})
	}
}
