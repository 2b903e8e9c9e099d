package consume_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/workload"
)

// MatrixEnv runs TestMatrix: which consumer configuration is safe under
// which fault, on both brokers, with worker processes. Its value is the
// number of seeds per cell.
const MatrixEnv = "IDEM_CONSUME_MATRIX"

// TestMatrix prints a Markdown table: for each configuration and fault,
// how many seeds passed on RabbitMQ and NATS. Only the duplicates column
// has publisher duplicates; the pause column has one duplicate per paused
// message (RabbitMQ has no ack timeout: the duplicate is what reaches
// another consumer) and prefetch 1, so that the stopped consumer cannot
// hold the duplicate as well.
func TestMatrix(t *testing.T) {
	v := os.Getenv(MatrixEnv)
	if v == "" {
		t.Skipf("set %s=SEEDS to run the consumer safety matrix", MatrixEnv)
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number of seeds", MatrixEnv, v)
	}
	rows := []struct {
		name string
		set  func(*consume.Config)
	}{
		{"broker only (no idempotency check)", func(c *consume.Config) { c.BrokerOnly = true }},
		{"engine, plain sink, no recovery", func(c *consume.Config) { c.Sink = workload.SinkPlain }},
		{"engine, fenced sink, no recovery", func(c *consume.Config) {}},
		{"engine, fenced sink + recovery", func(c *consume.Config) { c.Recovery = true }},
		{"naive cache-on-success, fenced + recovery", func(c *consume.Config) {
			st, _ := naive.New("cache-on-success", nil)
			c.Store, c.StoreName, c.Recovery = st, "naive/cache-on-success", true
		}},
	}
	cols := []struct {
		name  string
		nats  bool // NATS only
		fault func(*consume.Config)
	}{
		{"publisher duplicates", false, func(c *consume.Config) { c.DuplicateRate = 0.3 }},
		{"SIGKILL after effect, before ack", false, func(c *consume.Config) { c.Faults.CrashBeforeAck = 2 }},
		{"SIGSTOP before effect past lease and ack wait", false, func(c *consume.Config) {
			c.Faults.Pause, c.Faults.PauseFor = 2, time.Second // prefetch 1 by default
		}},
		{"consumer restarts (SIGTERM)", false, func(c *consume.Config) { c.Faults.Restarts = 3 }},
		{"nats-server restart", true, func(c *consume.Config) { c.Faults.ServerRestart, c.URL = true, "" }},
	}
	var b strings.Builder
	b.WriteString("| configuration |")
	for _, c := range cols {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(cols)))
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + row.name + " |")
		for _, col := range cols {
			var cell []string
			for _, br := range brokers {
				if col.nats && br != consume.NATS {
					continue
				}
				ok := 0
				for seed := range int64(n) {
					cfg := fast(br, brokerURL(t, br), 100+seed)
					cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 3
					cfg.DuplicateRate = -1
					row.set(&cfg)
					col.fault(&cfg)
					res, err := consume.Run(context.Background(), cfg)
					if err != nil {
						t.Fatalf("%s / %s / %s seed %d: %v", row.name, col.name, br, cfg.Seed, err)
					}
					if res.Report.Verdict == checker.VerdictOK {
						ok++
					}
				}
				cell = append(cell, fmt.Sprintf("%s %d/%d", br, ok, n))
			}
			b.WriteString(" " + strings.Join(cell, ", ") + " |")
		}
		b.WriteString("\n")
	}
	t.Logf("seeds passing per cell (%d seeds, worker processes):\n%s", n, b.String())
}
