package harness_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/backendfault"
	_ "github.com/idembench/idembench/chaos/backendfault/netproxy" // the network faults
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
)

// TestServerBackends runs the reference engine on Redis and PostgreSQL: a
// scenario passes, and the theory's unsafe cell (crash after the effect, no
// recovery) is caught; on PostgreSQL the transactional mode closes that
// cell without recovery and rejects a paused holder.
func TestServerBackends(t *testing.T) {
	type run struct {
		scenario, sink string
		noRecovery     bool
		want           checker.Verdict
	}
	common := []run{
		{"crash-after-effect", "fenced", false, checker.VerdictOK},
		{"crash-after-effect", "fenced", true, checker.VerdictViolation},
		{"duplicates", "fenced", false, checker.VerdictOK},
	}
	cases := []struct {
		backend harness.Backend
		url     func(testing.TB) string
		runs    []run
	}{
		{harness.Redis, testenv.RedisURL, common},
		{harness.Postgres, testenv.PostgresURL, append(common,
			run{"crash-after-effect", "tx", true, checker.VerdictOK},
			run{"gc-pause", "tx", true, checker.VerdictOK})},
	}
	for _, c := range cases {
		t.Run(string(c.backend), func(t *testing.T) {
			url := c.url(t)
			for _, r := range c.runs {
				o, err := harness.Run(context.Background(), harness.Spec{
					Engine: engine(t, harness.ReferenceEngine), Backend: c.backend, URL: url,
					ScenarioName: r.scenario, Sink: r.sink, NoRecovery: r.noRecovery,
					Overrides: harness.Overrides{Seed: 5, Duration: time.Second}, CheckTimeout: time.Minute,
				})
				if err != nil {
					t.Fatalf("%+v: %v", r, err)
				}
				if o.Report.Verdict != r.want {
					t.Fatalf("%+v: verdict %s, want %s (violated %v)", r, o.Report.Verdict, r.want, o.Report.Violated())
				}
				if o.Ledger.Applied == 0 {
					t.Fatalf("%+v: no effect applied", r)
				}
			}
		})
	}
}

// TestSpecErrors: an unreachable server is an environment error, a spec
// the harness cannot run a configuration error.
func TestSpecErrors(t *testing.T) {
	ref := engine(t, harness.ReferenceEngine)
	cases := []struct {
		name string
		sp   harness.Spec
		want error
	}{
		{"postgres down", harness.Spec{Engine: ref, Backend: harness.Postgres, URL: "postgres://postgres@127.0.0.1:1/none?connect_timeout=2"}, harness.ErrEnvironment},
		{"redis down", harness.Spec{Engine: ref, Backend: harness.Redis, URL: "redis://127.0.0.1:1/0"}, harness.ErrEnvironment},
		{"postgres no url", harness.Spec{Engine: ref, Backend: harness.Postgres}, harness.ErrConfig},
		{"redis bad url", harness.Spec{Engine: ref, Backend: harness.Redis, URL: "http://nope"}, harness.ErrConfig},
		{"naive on redis", harness.Spec{Engine: engine(t, "naive/no-expiry"), Backend: harness.Redis, URL: "redis://127.0.0.1:1/0"}, harness.ErrConfig},
		{"tx on memory", harness.Spec{Engine: ref, Sink: "tx"}, harness.ErrConfig},
		{"tx without a tx mode", harness.Spec{Engine: engine(t, "naive/no-expiry"), Sink: "tx"}, harness.ErrConfig},
		{"no engine", harness.Spec{}, harness.ErrConfig},
		{"unknown scenario", harness.Spec{Engine: ref, ScenarioName: "nope"}, harness.ErrConfig},
		{"unknown sink", harness.Spec{Engine: ref, Sink: "nope"}, harness.ErrConfig},
		{"unknown backend", harness.Spec{Engine: ref, Backend: "mongo"}, harness.ErrConfig},
		{"restart without a server", harness.Spec{Engine: ref, Backend: harness.Redis, URL: "redis://127.0.0.1:1/0",
			Faults: &backendfault.Plan{Faults: []chaos.Fault{{Kind: history.FaultRestart, Start: time.Second}}}}, harness.ErrConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.sp.Overrides.Duration = 100 * time.Millisecond
			_, err := harness.Run(context.Background(), c.sp)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

// TestBackendFaults: a Redis restart without persistence during duplicates
// is caught, with AOF always it passes; replies dropped after apply give
// unknown outcomes and no false violation.
func TestBackendFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private Redis servers")
	}
	url := testenv.RedisURL(t) // the network case runs against the configured server
	ctx := context.Background()
	run := func(t *testing.T, plan *backendfault.Plan) *harness.Outcome {
		t.Helper()
		o, err := harness.Run(ctx, harness.Spec{
			Engine: engine(t, harness.ReferenceEngine), Backend: harness.Redis, URL: url, ScenarioName: "duplicates",
			Overrides: harness.Overrides{Seed: 11, Duration: 1200 * time.Millisecond}, CheckTimeout: time.Minute, Faults: plan,
		})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, p := range []servers.Persistence{servers.None, servers.AOFAlways} {
		t.Run("restart-"+p.String(), func(t *testing.T) {
			r, err := servers.StartRedis(ctx, servers.RedisOptions{Persistence: p})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Stop()
			o := run(t, &backendfault.Plan{Server: r, RestartLabel: "restart redis", Faults: []chaos.Fault{
				{Kind: history.FaultRestart, Start: 400 * time.Millisecond}, {Kind: history.FaultRestart, Start: 800 * time.Millisecond}}})
			want := checker.VerdictOK
			if p == servers.None {
				want = checker.VerdictViolation
			}
			if o.Report.Verdict != want {
				t.Fatalf("verdict %s, want %s (violated %v)", o.Report.Verdict, want, o.Report.Violated())
			}
			if n, k := countFaults(o.History, "restart redis"), history.CountFaults(o.History.Ops)[history.FaultRestart]; n != 2 || k != 2 {
				t.Fatalf("%d restart windows, %d of kind restart, want 2", n, k)
			}
		})
	}
	t.Run("drop-replies", func(t *testing.T) {
		o := run(t, &backendfault.Plan{ClientTimeout: 200 * time.Millisecond, Faults: []chaos.Fault{
			{Kind: history.FaultDropReplies, Start: 300 * time.Millisecond, Duration: 400 * time.Millisecond},
		}})
		if o.Report.Verdict != checker.VerdictOK {
			t.Fatalf("verdict %s (violated %v)", o.Report.Verdict, o.Report.Violated())
		}
		if o.Summary.Outcomes["unknown"] == 0 {
			t.Fatal("no unknown outcome while replies were dropped")
		}
		if o.Summary.Outcomes["failed"] != 0 {
			t.Fatalf("%d failed outcomes: a lost reply must be unknown", o.Summary.Outcomes["failed"])
		}
		if countFaults(o.History, "net drop-replies") != 1 || history.CountFaults(o.History.Ops)[history.FaultDropReplies] != 1 {
			t.Fatal("the network window is not in the history")
		}
	})
}

func countFaults(h *history.History, label string) int {
	n := 0
	for i := range h.Ops {
		if h.Ops[i].Kind == history.KindFault && h.Ops[i].Label == label {
			n++
		}
	}
	return n
}
