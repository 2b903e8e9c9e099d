package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// lastSample is a Progress that keeps the figures of its last sample,
// taken when the harness stops it after the workload.
type lastSample struct{ got harness.LiveStats }

func (l *lastSample) Latency() *workload.LiveLatency { return nil }

func (l *lastSample) Watch(sample func() harness.LiveStats, _ time.Duration) func() {
	return func() { l.got = sample() }
}

// TestHeaderRetentionAndLiveCalls checks that the history header carries
// the engine's retention (the scenario's, or idem.DefaultRetention) and
// that the live figures count the calls alone, not the effects and lease
// operations the history also holds.
func TestHeaderRetentionAndLiveCalls(t *testing.T) {
	sc, err := scenarios.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	hour := *sc
	hour.Engine.Retention = time.Hour
	cases := []struct {
		name string
		sc   *scenarios.Scenario
		want time.Duration
	}{
		{"engine default", sc, idem.DefaultRetention},
		{"scenario's retention", &hour, time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := &lastSample{}
			o, err := harness.Run(context.Background(), harness.Spec{
				Engine: engine(t, harness.ReferenceEngine), Scenario: c.sc, Progress: pr,
				Overrides: harness.Overrides{Seed: 7, Duration: 300 * time.Millisecond},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := o.History.Header.Retention; got != c.want {
				t.Errorf("header retention %s, want %s", got, c.want)
			}
			calls, others := 0, 0
			for _, op := range o.History.Ops {
				if op.Kind == history.KindCall {
					calls++
				} else {
					others++
				}
			}
			if calls == 0 || others == 0 {
				t.Fatalf("history has %d calls and %d other ops; want both", calls, others)
			}
			if pr.got.Calls != calls || pr.got.Ops <= calls {
				t.Errorf("live figures %+v, want Calls %d and Ops above it", pr.got, calls)
			}
		})
	}
}
