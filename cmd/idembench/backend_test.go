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

// TestServerBackends runs the reference engine on Redis and PostgreSQL: a
// scenario passes, and the theory's unsafe cell (crash after the effect, no
// recovery) is caught.
func TestServerBackends(t *testing.T) {
	for _, backend := range []string{backendRedis, backendPostgres} {
		t.Run(backend, func(t *testing.T) {
			sp := runSpec{Backend: backend, Engine: engineIdem, Sink: "fenced", Seed: 5, Duration: time.Second, Rate: -1, CheckTimeout: time.Minute}
			if backend == backendRedis {
				sp.RedisURL = testenv.RedisURL(t)
			} else {
				sp.PostgresURL = testenv.PostgresURL(t)
			}
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
				sp.Scenario, sp.ScenarioArg, sp.Recovery = sc, c.scenario, c.recovery
				o, err := execute(context.Background(), sp)
				if err != nil {
					t.Fatalf("%s recovery=%t: %v", c.scenario, c.recovery, err)
				}
				if o.Report.Verdict != c.want {
					t.Fatalf("%s recovery=%t: verdict %s, want %s (violated %v)", c.scenario, c.recovery, o.Report.Verdict, c.want, o.Report.Violated())
				}
			}
		})
	}
}

// TestBackendErrors: an unreachable server is an environment error (exit
// 5), a missing or malformed URL a usage error (exit 2).
func TestBackendErrors(t *testing.T) {
	sc, err := scenarios.Load("duplicates")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, backend, redis, postgres string
		want                           int
	}{
		{"postgres down", backendPostgres, "", "postgres://postgres@127.0.0.1:1/none?connect_timeout=2", exitEnvironment},
		{"redis down", backendRedis, "redis://127.0.0.1:1/0", "", exitEnvironment},
		{"postgres no url", backendPostgres, "", "", exitUsage},
		{"redis no url", backendRedis, "", "", exitUsage},
		{"redis bad url", backendRedis, "http://nope", "", exitUsage},
		{"naive on redis", backendRedis, "redis://127.0.0.1:1/0", "", exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			engine := engineIdem
			if c.name == "naive on redis" {
				engine = "naive/no-expiry"
			}
			_, err := execute(context.Background(), runSpec{
				Scenario: sc, Backend: c.backend, Engine: engine, Sink: "fenced", Rate: -1,
				Duration: 100 * time.Millisecond, RedisURL: c.redis, PostgresURL: c.postgres,
			})
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != c.want {
				t.Fatalf("error %v, want exit code %d", err, c.want)
			}
		})
	}
}
