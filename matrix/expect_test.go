package matrix

import (
	"testing"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/harness"
)

// TestExpectations pins the expected verdicts to docs/design/verification.md's safety
// matrix, with the backend-restart column spelled out.
func TestExpectations(t *testing.T) {
	cases := []struct {
		config   Config
		fault    Fault
		variant  string
		want     string
		byChance bool
	}{
		{Plain, Crash, "", Unsafe, false},
		{Plain, Pause, "", Unsafe, false},
		{Plain, Pause, Processes, Unsafe, false},
		{Plain, Dup, "", Safe, false},
		{Plain, Net, "", Unsafe, false},
		{Fenced, Net, "", Unsafe, false},
		{Recovery, Net, "", Safe, false},
		{Fenced, Restart, RedisAOF, Unsafe, false},
		{Fenced, Restart, PostgresCrash, Unsafe, false},
		{Plain, Restart, RedisNone, Unsafe, false},
		{Fenced, Crash, "", Unsafe, false},
		{Fenced, Crash, Processes, Unsafe, false},
		{Fenced, Pause, "", Safe, false},
		{Fenced, Pause, Processes, Unsafe, false},
		{Recovery, Pause, Processes, Safe, false},
		{Recovery, Crash, "", Safe, false},
		{Recovery, Restart, RedisNone, Unsafe, false},
		{Recovery, Restart, RedisAOF, Safe, false},
		{Recovery, Restart, PostgresCrash, Safe, false},
		{Tx, Crash, "", Safe, false},
		{Tx, Pause, "", Safe, false},
		{Tx, Restart, PostgresCrash, Safe, false},
		{Recovery, Failover, string(backendfault.RedisSentinel), Unsafe, false},
		{Plain, Failover, string(backendfault.RedisSentinel), Unsafe, false},
		{Recovery, Failover, string(backendfault.RedisWait), Safe, false},
		{Fenced, Failover, string(backendfault.RedisWait), Unsafe, false},
		{Plain, Failover, string(backendfault.PostgresSync), Unsafe, false},
		{Recovery, Failover, string(backendfault.RedisCluster), Unsafe, false},
		{Fenced, Failover, string(backendfault.RedisCluster), Unsafe, false},
		{Recovery, Failover, string(backendfault.PostgresAsync), Unsafe, false},
		{Recovery, Failover, string(backendfault.PostgresSync), Safe, false},
		{Tx, Failover, string(backendfault.PostgresAsync), Unsafe, false},
		{Tx, Failover, string(backendfault.PostgresSync), Safe, false},
		// The consumer rows: a crash before the ack is a crash after the
		// effect, so only recovery makes it safe; the broker alone and the
		// naive store are caught; publisher duplicates are safe with any
		// engine configuration.
		{Plain, CrashBeforeAck, "", Unsafe, false},
		{Fenced, CrashBeforeAck, Processes, Unsafe, false},
		{Fenced, CrashBeforeAck, BatchProcesses, Unsafe, false},
		{Recovery, CrashBeforeAck, "", Safe, false},
		{Recovery, CrashBeforeAck, Processes, Safe, false},
		{Recovery, CrashBeforeAck, BatchProcesses, Safe, false},
		{BrokerOnly, CrashBeforeAck, "", Unsafe, false},
		{NaiveStore, CrashBeforeAck, Processes, Unsafe, false},
		{Recovery, Dup, "", Safe, false},
		{BrokerOnly, Dup, "", Unsafe, false},
		{NaiveStore, Dup, "", Unsafe, false},
	}
	for _, c := range cases {
		got, byChance := expect(c.config, c.fault, c.variant)
		if got != c.want || byChance != c.byChance {
			t.Errorf("%s × %s %s: expected %s (by chance %t), want %s (by chance %t)", c.config, c.fault, c.variant, got, byChance, c.want, c.byChance)
		}
	}
}

func TestCells(t *testing.T) {
	all := []harness.Backend{harness.Memory, harness.Redis, harness.Postgres}
	cases := []struct {
		quick    bool
		backends []harness.Backend
		want     int
	}{
		{true, all, 24},
		{true, []harness.Backend{harness.Memory}, 9},
		{false, all, 78},
		{true, []harness.Backend{RabbitMQ, NATS}, 2},
		{true, []harness.Backend{NATS}, 0},
		{false, []harness.Backend{RabbitMQ, NATS}, 34},
		{false, []harness.Backend{NATS}, 17},
	}
	for _, c := range cases {
		cells := Cells(c.quick, c.backends, Servers{})
		if len(cells) != c.want {
			t.Errorf("quick %t on %v: %d cells, want %d", c.quick, c.backends, len(cells), c.want)
		}
		for _, cell := range cells {
			if isBroker(cell.Backend) != (cell.scenario == "") {
				t.Errorf("%s × %s on %s: a broker cell must have no scenario and a scenario cell no broker", cell.Config, cell.Fault, cell.Backend)
			}
			if cell.Config == Tx && cell.Backend != harness.Postgres {
				t.Errorf("tx cell on %s", cell.Backend)
			}
			if (cell.Fault == Failover) != (cell.failover != "") || cell.failover != "" && string(cell.Backend) != cell.failover.Backend() {
				t.Errorf("%s × %s %s: failover %q on %s", cell.Config, cell.Fault, cell.Variant, cell.failover, cell.Backend)
			}
			if cell.Variant == Processes && cell.workers == 0 && !isBroker(cell.Backend) { // a consumer cell runs its own processes
				t.Errorf("%s × %s: a worker-process cell without workers", cell.Config, cell.Fault)
			}
		}
	}
}

func TestStatus(t *testing.T) {
	cases := []struct {
		cell Cell
		want string
	}{
		{Cell{Observed: NotRun}, "-"},
		{Cell{Observed: Safe, Expected: Safe, Match: true}, "yes"},
		{Cell{Observed: Safe, Expected: Unsafe, Missed: true}, "missed"},
		{Cell{Observed: Unsafe, Expected: Safe}, "NO"},
	}
	for _, c := range cases {
		if got := c.cell.Status(); got != c.want {
			t.Errorf("%+v: status %q, want %q", c.cell, got, c.want)
		}
		// Everything but "yes" and "not run" fails the matrix, a miss too.
		if got, want := c.cell.Differs(), c.want == "NO" || c.want == "missed"; got != want {
			t.Errorf("%+v: Differs %t, want %t", c.cell, got, want)
		}
	}
}
