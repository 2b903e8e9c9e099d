package harness_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
)

// TestBackendDiesOutsideThePlan: a private redis-server, started by the
// test on a free loopback port and killed (SIGKILL) or frozen (SIGSTOP)
// in the middle of the traffic by no fault of the run's plan, makes the
// run an environment error that names the server, not a verdict (before,
// the liveness probes it failed were an I6 violation). With the server in
// the plan (its restarts planned, its death not), the error names the
// process and the signal.
func TestBackendDiesOutsideThePlan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private Redis servers")
	}
	if testenv.Required() {
		testenv.RedisURL(t) // a server is required; the private one needs redis-server too
	}
	cases := []struct {
		name    string
		planned bool // the server is the plan's, with a planned restart
		sig     syscall.Signal
		want    []string
	}{
		{"url/SIGKILL", false, syscall.SIGKILL, []string{"refused every read for 2s", "plans no backend fault"}},
		{"url/SIGSTOP", false, syscall.SIGSTOP, []string{"stopped answering during the run"}},
		{"plan/SIGKILL", true, syscall.SIGKILL, []string{"backend died during the run: the run's private redis server", "killed by SIGKILL", "not by the fault plan"}},
		{"plan/SIGSTOP", true, syscall.SIGSTOP, []string{"backend died during the run: the run's private redis server", "stopped (SIGSTOP)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			r, err := servers.StartRedis(ctx, servers.RedisOptions{})
			if errors.Is(err, servers.ErrNotFound) && !testenv.Required() {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Stop()
			sp := harness.Spec{
				Engine: engine(t, harness.ReferenceEngine), Backend: harness.Redis, URL: r.URL(), ScenarioName: "duplicates",
				Overrides: harness.Overrides{Seed: 3, Duration: 1500 * time.Millisecond}, CheckTimeout: time.Minute,
			}
			if c.planned {
				sp.Faults = &backendfault.Plan{Server: r, RestartLabel: "restart redis", Faults: []chaos.Fault{{Kind: history.FaultRestart, Start: 200 * time.Millisecond}}}
			}
			var pid atomic.Int64
			first := r.PID()
			killer := time.AfterFunc(700*time.Millisecond, func() {
				// With a plan, the kill must come after its planned restart
				// (at 200ms, slower on a loaded machine), or it meets the
				// server the plan is restarting anyway: wait for the new one.
				for deadline := time.Now().Add(5 * time.Second); c.planned && (r.PID() == first || r.PID() <= 0) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				pid.Store(int64(r.PID()))
				_ = syscall.Kill(r.PID(), c.sig)
			})
			defer killer.Stop()
			start := time.Now()
			o, err := harness.Run(ctx, sp)
			t.Logf("the run took %s", time.Since(start).Round(time.Millisecond))
			if p := int(pid.Load()); c.sig == syscall.SIGSTOP && p > 0 {
				_ = syscall.Kill(p, syscall.SIGCONT)
			}
			if err == nil {
				t.Fatalf("verdict %s (violated %v); want an environment error", o.Report.Verdict, o.Report.Violated())
			}
			if !errors.Is(err, harness.ErrEnvironment) || !errors.Is(err, harness.ErrBackendDied) || errors.Is(err, harness.ErrConfig) {
				t.Errorf("error %v; want one wrapping ErrEnvironment and ErrBackendDied", err)
			}
			for _, w := range append(c.want, r.Addr()) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
