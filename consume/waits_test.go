package consume_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/internal/testenv"
)

// runWithin runs consume.Run and fails t if it has not returned within
// limit.
func runWithin(t *testing.T, ctx context.Context, cfg consume.Config, limit time.Duration) (*consume.Result, time.Duration, error) {
	t.Helper()
	type result struct {
		res *consume.Result
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		res, err := consume.Run(ctx, cfg)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, time.Since(start), r.err
	case <-time.After(limit):
		t.Fatalf("Run still running after %s", limit)
		return nil, 0, nil
	}
}

// TestWaitsHonourTheRun: a handler that works 30 s per message stops when
// the run's ctx is cancelled or its Timeout passes: Run returns within a
// second or two, with the history so far when cancelled and the queues or
// streams removed.
func TestWaitsHonourTheRun(t *testing.T) {
	cases := []struct {
		name      string
		cancelled bool
		procs     bool
	}{
		{"cancelled", true, false},
		{"cancelled with worker processes", true, true},
		{"timeout", false, false},
	}
	for _, b := range brokers {
		url := brokerURL(t, b)
		for _, tc := range cases {
			if tc.procs && b == consume.NATS {
				continue // one broker is enough for the worker path
			}
			t.Run(b+"/"+tc.name, func(t *testing.T) {
				cfg := fast(b, url, 21)
				cfg.Messages, cfg.Latency, cfg.Recovery = 20, 30*time.Second, true
				if tc.procs {
					cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 2
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var cancelled time.Time
				if tc.cancelled {
					time.AfterFunc(1500*time.Millisecond, func() { cancelled = time.Now(); cancel() })
				} else {
					cfg.Timeout = time.Second
				}
				res, took, err := runWithin(t, ctx, cfg, 10*time.Second)
				if tc.cancelled {
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("err %v, want context.Canceled", err)
					}
					if after := time.Since(cancelled); after > 2*time.Second {
						t.Errorf("Run returned %s after the cancel, want within 2 s", after)
					}
					// The history so far: on a loaded machine worker
					// processes may not have had a delivery by the cancel.
					if res == nil || res.History == nil || res.Stats.Deliveries > 0 && len(res.History.Ops) == 0 {
						t.Fatalf("cancelled run: no history so far (%+v)", res)
					}
					if res.Report.Verdict != "" {
						t.Errorf("cancelled run checked: verdict %q", res.Report.Verdict)
					}
				} else {
					if !errors.Is(err, consume.ErrNotDrained) {
						t.Fatalf("err %v, want ErrNotDrained", err)
					}
					if took > 5*time.Second {
						t.Errorf("a run with a 1 s timeout took %s", took)
					}
				}
				assertGone(t, b, url, res.Resources)
			})
		}
	}
}

// TestBrokerDies: a broker whose connections die in the middle of a run
// (not a planned fault) ends the run with ErrBroker naming the connection,
// never with a verdict or a timeout.
func TestBrokerDies(t *testing.T) {
	for _, b := range brokers {
		t.Run(b, func(t *testing.T) {
			direct := brokerURL(t, b)
			px, url := newProxy(t, direct)
			cfg := fast(b, url, 23)
			cfg.Messages, cfg.Latency, cfg.Recovery, cfg.Timeout = 300, 20*time.Millisecond, true, time.Minute
			time.AfterFunc(time.Second, px.kill)
			res, took, err := runWithin(t, context.Background(), cfg, 20*time.Second)
			if res != nil {
				testenv.RemoveFromBroker(t, b, direct, res.Resources)
			}
			if !errors.Is(err, consume.ErrBroker) || errors.Is(err, consume.ErrNotDrained) {
				t.Fatalf("err %v, want ErrBroker", err)
			}
			name := map[string]string{consume.RabbitMQ: "RabbitMQ", consume.NATS: "NATS"}[b]
			if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "connection") {
				t.Errorf("error does not name the %s connection: %v", name, err)
			}
			t.Logf("ended %s after the start: %v", took.Round(time.Millisecond), err)
		})
	}
}
