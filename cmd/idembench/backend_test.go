package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
)

// TestPostgresBackend runs the reference engine on PostgreSQL: a scenario
// passes, and the theory's unsafe cell (crash after the effect, no
// recovery) is caught.
func TestPostgresBackend(t *testing.T) {
	url := testenv.PostgresURL(t)
	cases := []struct {
		scenario string
		recovery bool
		want     checker.Verdict
	}{
		{"crash-after-effect", true, checker.VerdictOK},
		{"crash-after-effect", false, checker.VerdictViolation},
		{"duplicates", true, checker.VerdictOK},
	}
	for _, c := range cases {
		sc, err := scenarios.Load(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		o, err := execute(context.Background(), runSpec{
			Scenario: sc, ScenarioArg: c.scenario,
			Backend: backendPostgres, Engine: engineIdem, Sink: "fenced", Recovery: c.recovery,
			Seed: 5, Duration: time.Second, Rate: -1, PostgresURL: url,
			CheckTimeout: time.Minute,
		})
		if err != nil {
			t.Fatalf("%s recovery=%t: %v", c.scenario, c.recovery, err)
		}
		if o.Report.Verdict != c.want {
			t.Fatalf("%s recovery=%t: verdict %s, want %s (violated %v)", c.scenario, c.recovery, o.Report.Verdict, c.want, o.Report.Violated())
		}
	}
}

func TestPostgresUnreachableIsEnvironmentError(t *testing.T) {
	sc, err := scenarios.Load("duplicates")
	if err != nil {
		t.Fatal(err)
	}
	_, err = execute(context.Background(), runSpec{
		Scenario: sc, Backend: backendPostgres, Engine: engineIdem, Sink: "fenced", Rate: -1,
		Duration: 100 * time.Millisecond, PostgresURL: "postgres://postgres@127.0.0.1:1/none?connect_timeout=2",
	})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitEnvironment {
		t.Fatalf("error %v, want exit code %d", err, exitEnvironment)
	}
}
