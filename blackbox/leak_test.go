package blackbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

func keysWithCopies() workload.Keys {
	return workload.Keys{Concurrent: 1, Delayed: 1, Delay: 20 * time.Millisecond}
}

// marked returns the pids of live processes whose environment holds
// BLACKBOX_MARK=mark.
func marked(mark string) []int {
	want := []byte("BLACKBOX_MARK=" + mark + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // a zombie holds nothing
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestNothingLeftRunning runs the example server with every kind of fault
// and checks that after Run returns no process of the service and no
// goroutine of the harness (proxy, downstream, clients) is left: after a
// pass, after a violation, and when ctx is cancelled mid-run (while the
// service is paused).
func TestNothingLeftRunning(t *testing.T) {
	cases := []struct {
		name     string
		flaw     []string
		cancelAt time.Duration
		faults   []chaos.Fault
	}{
		{name: "pass", faults: []chaos.Fault{{Kind: history.FaultPartition}, {Kind: history.FaultPause}}},
		{name: "violation", flaw: []string{"--flaw", "effect-before-claim"}, faults: []chaos.Fault{{Kind: history.FaultDropReplies}}},
		{name: "cancelled while paused", cancelAt: 400 * time.Millisecond,
			faults: []chaos.Fault{{Kind: history.FaultPause, Start: 200 * time.Millisecond, Duration: 2 * time.Second}, {Kind: history.FaultLatency, Start: 100 * time.Millisecond, Duration: 500 * time.Millisecond}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			mark := "leak-" + strconv.Itoa(i) + "-" + strconv.Itoa(os.Getpid())
			tg := exampleTarget(t, tc.flaw...)
			tg.Start.Env = map[string]string{"BLACKBOX_MARK": mark}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAt > 0 {
				tg.Conformance.Skip = true
				time.AfterFunc(tc.cancelAt, cancel)
			}
			seen := make(chan int, 1)
			time.AfterFunc(100*time.Millisecond, func() { seen <- len(marked(mark)) })
			start := time.Now()
			_, err := Run(ctx, Spec{Target: tg, Seed: int64(i), Duration: 700 * time.Millisecond, Clients: 2,
				Keys: keysWithCopies(), Retry: workload.Retry{Timeout: 300 * time.Millisecond}, Faults: tc.faults})
			if tc.cancelAt > 0 {
				if !errors.Is(err, context.Canceled) || checker.ExitCode(err) != checker.ExitInterrupted {
					t.Errorf("cancelled run: err %v, want context.Canceled, exit 130", err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("cancelled run took %v to return", d)
				}
			}
			if n := <-seen; n == 0 {
				t.Errorf("the process scan did not see the service while it ran")
			}
			if left := marked(mark); len(left) > 0 {
				t.Errorf("service processes %v still run after Run returned", left)
			}
		})
	}
}
