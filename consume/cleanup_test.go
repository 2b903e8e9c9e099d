package consume_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/internal/testenv"
)

// assertGone fails t if any of the run's queues or streams still exists.
func assertGone(t *testing.T, broker, url string, resources []string) {
	t.Helper()
	if left := testenv.LeftOnBroker(t, broker, url, resources); len(left) > 0 {
		t.Errorf("queues or streams still exist after the run: %v", left)
	}
}

// TestCleanup checks that a run removes its queues or streams when it ends
// and when its context is cancelled in the middle of the traffic, with
// in-process consumers and with worker processes.
func TestCleanup(t *testing.T) {
	cases := []struct {
		name             string
		cancelled, procs bool
	}{
		{"completed", false, false},
		{"cancelled", true, false},
		{"cancelled with worker processes", true, true},
	}
	for _, b := range brokers {
		url := brokerURL(t, b)
		for _, tc := range cases {
			t.Run(b+"/"+tc.name, func(t *testing.T) {
				cfg := fast(b, url, 11)
				cfg.Recovery = true
				if tc.procs {
					cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 2
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelled {
					cfg.Messages, cfg.Latency = 3000, 5*time.Millisecond
					time.AfterFunc(700*time.Millisecond, cancel)
				}
				res, err := consume.Run(ctx, cfg)
				if tc.cancelled != errors.Is(err, context.Canceled) {
					t.Fatalf("err %v (cancelled %v)", err, tc.cancelled)
				}
				if !tc.cancelled && err != nil {
					t.Fatal(err)
				}
				assertGone(t, b, url, res.Resources)
			})
		}
	}
}

// TestCleanupPrivateServer checks that a run with its own nats-server
// stops it and removes its store, also when cancelled.
func TestCleanupPrivateServer(t *testing.T) {
	needNATSServer(t)
	dirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), "idembench-nats-*"))
		return m
	}
	before := dirs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := fast(consume.NATS, "", 13)
	cfg.Messages, cfg.Latency, cfg.Recovery, cfg.Faults.ServerRestart = 3000, 5*time.Millisecond, true, true
	time.AfterFunc(400*time.Millisecond, cancel)
	if _, err := consume.Run(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if after := dirs(); len(after) > len(before) {
		t.Fatalf("private server directories left: %v (before the run: %v)", after, before)
	}
}
