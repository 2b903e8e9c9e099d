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

// TestTxSink: Postgres transactional mode closes the crash-after-effect
// window without a recovery hook (the crashed holder's effect rolls back
// with its transaction), and rejects a paused holder; with a backend other
// than PostgreSQL --sink tx is a usage error.
func TestTxSink(t *testing.T) {
	url := testenv.PostgresURL(t)
	for _, name := range []string{"crash-after-effect", "gc-pause"} {
		sc, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		o, err := execute(context.Background(), runSpec{
			Scenario: sc, ScenarioArg: name, Backend: backendPostgres, Engine: engineIdem, Sink: "tx",
			Seed: 3, Duration: 1500 * time.Millisecond, Rate: -1, PostgresURL: url, CheckTimeout: time.Minute,
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.Report.Verdict != checker.VerdictOK {
			t.Fatalf("%s: verdict %s (violated %v)", name, o.Report.Verdict, o.Report.Violated())
		}
		if o.Ledger.Applied == 0 {
			t.Fatalf("%s: no effect committed", name)
		}
	}
	sc, _ := scenarios.Load("default")
	_, err := execute(context.Background(), runSpec{Scenario: sc, Backend: backendMemory, Engine: engineIdem, Sink: "tx", Seed: 1, Rate: -1})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("--sink tx on memory: %v, want a usage error", err)
	}
}
