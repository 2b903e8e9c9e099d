package blackbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// pyTarget loads examples/pyservice/target.yaml, with extra arguments
// appended to its command; its command runs in the target file's
// directory, whatever the test's.
func pyTarget(t *testing.T, extra ...string) *Target {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not in PATH")
	}
	tg, err := LoadTarget("../examples/pyservice/target.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg.Start.Command = append(tg.Start.Command, extra...)
	return tg
}

func TestPythonService(t *testing.T) {
	if _, err := os.Stat("../examples/pyservice/server.py"); err != nil {
		t.Fatal(err)
	}
	spec := func(tg *Target) Spec {
		return Spec{
			Target: tg, Seed: 5, Duration: 800 * time.Millisecond, Clients: 4,
			Keys:   workload.Keys{Concurrent: 1, Delayed: 1, Delay: 30 * time.Millisecond, MismatchRate: 0.02},
			Retry:  workload.Retry{MaxAttempts: 6, Timeout: 500 * time.Millisecond, Backoff: 20 * time.Millisecond},
			Faults: []chaos.Fault{{Kind: history.FaultDropReplies}, {Kind: history.FaultPause}},
		}
	}
	t.Run("correct", func(t *testing.T) {
		out, err := Run(context.Background(), spec(pyTarget(t)))
		if err != nil {
			t.Fatalf("python service without a flaw: %v (violations %+v, conformance %+v)", err, out.Check.Violations, out.Conformance)
		}
		if out.Check.Stats.Effects < 5 {
			t.Errorf("only %d effects recorded", out.Check.Stats.Effects)
		}
	})
	t.Run("check-then-act", func(t *testing.T) {
		out, err := Run(context.Background(), spec(pyTarget(t, "--flaw", "check-then-act")))
		if !errors.Is(err, ErrViolation) || out.Check.Result(checker.I1AtMostOnce).Violations == 0 {
			t.Fatalf("python check-then-act not caught as I1: err %v, violated %v", err, out.Check.Violated())
		}
	})
}
