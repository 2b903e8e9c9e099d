package consume_test

import (
	"context"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/workload"
)

// TestProcesses runs consumers in worker processes with real signals:
// SIGKILL after the effect and before the ack, SIGSTOP before the effect
// past the lease and the NATS ack wait, SIGTERM restarts.
func TestProcesses(t *testing.T) {
	tests := []struct {
		name   string
		set    func(*consume.Config)
		faults consume.Faults
		want   checker.Verdict
	}{
		{"fenced+recovery, SIGKILL before ack, SIGSTOP, restart", func(c *consume.Config) { c.Recovery = true },
			consume.Faults{CrashBeforeAck: 2, Pause: 1, PauseFor: time.Second, Restarts: 1}, checker.VerdictOK},
		{"broker only, SIGKILL before ack", func(c *consume.Config) { c.BrokerOnly = true },
			consume.Faults{CrashBeforeAck: 1}, checker.VerdictViolation},
		{"plain sink, SIGSTOP before effect", func(c *consume.Config) { c.Sink = workload.SinkPlain },
			consume.Faults{Pause: 2, PauseFor: time.Second}, checker.VerdictViolation},
	}
	for _, b := range brokers {
		for _, tt := range tests {
			t.Run(b+"/"+tt.name, func(t *testing.T) {
				cfg := fast(b, brokerURL(t, b), 21)
				cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 3
				cfg.Faults = tt.faults
				tt.set(&cfg)
				res, err := consume.Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%+v", res.Stats)
				for _, op := range res.History.Ops {
					if op.Kind == 3 {
						t.Log(op.Label)
					}
				}
				if res.Report.Verdict != tt.want {
					t.Fatalf("verdict %s (violated %v), want %s", res.Report.Verdict, res.Report.Violated(), tt.want)
				}
				if res.Stats.Crashes != tt.faults.CrashBeforeAck || res.Stats.Pauses != tt.faults.Pause || res.Stats.Restarts != tt.faults.Restarts {
					t.Fatalf("faults struck: %d crashes, %d pauses, %d restarts; want %+v", res.Stats.Crashes, res.Stats.Pauses, res.Stats.Restarts, tt.faults)
				}
			})
		}
	}
}
