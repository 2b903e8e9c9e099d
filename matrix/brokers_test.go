package matrix

import (
	"context"
	"testing"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/internal/testenv"
)

// TestBrokerExpectations pins the consumer rows to the theory: a crash
// before the ack is a crash after the effect, so only recovery makes it
// safe; the broker alone and the naive store are caught; publisher
// duplicates are safe with any engine configuration.
func TestBrokerExpectations(t *testing.T) {
	cases := []struct {
		config   Config
		fault    Fault
		variant  string
		want     string
		byChance bool
	}{
		{Plain, CrashBeforeAck, "", Unsafe, false},
		{Fenced, CrashBeforeAck, Processes, Unsafe, false},
		{Fenced, CrashBeforeAck, BatchProcesses, Unsafe, false},
		{Recovery, CrashBeforeAck, "", Safe, false},
		{Recovery, CrashBeforeAck, Processes, Safe, false},
		{Recovery, CrashBeforeAck, BatchProcesses, Safe, false},
		{BrokerOnly, CrashBeforeAck, "", Unsafe, false},
		{NaiveStore, CrashBeforeAck, Processes, Unsafe, false},
		{Plain, Dup, "", Safe, false},
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

func TestBrokerCells(t *testing.T) {
	both := []harness.Backend{RabbitMQ, NATS}
	cases := []struct {
		quick    bool
		backends []harness.Backend
		want     int
	}{
		{true, both, 2},
		{true, []harness.Backend{NATS}, 0},
		{false, both, 34},
		{false, []harness.Backend{NATS}, 17},
		{false, []harness.Backend{harness.Memory}, 9}, // no broker cell
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
		}
	}
}

// TestBrokerCellsRun runs the quick matrix's consumer cells on the local
// RabbitMQ: the reference engine is observed safe, the broker alone unsafe,
// each with a replay command.
func TestBrokerCellsRun(t *testing.T) {
	o := Options{Quick: true, Backends: []harness.Backend{RabbitMQ}, Seed: 5, AMQPURL: testenv.AMQPURL(t)}
	r := Run(context.Background(), o)
	if len(r.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(r.Cells))
	}
	for _, c := range r.Cells {
		if !c.Match || c.Faults != 2 || c.Replay == "" {
			t.Errorf("%s × %s: expected %s, observed %s (%s), %d faults, replay %q", c.Config, c.Fault, c.Expected, c.Observed, c.Note, c.Faults, c.Replay)
		}
	}
	if differ, errs := r.Differ(); differ != 0 || errs != 0 {
		t.Fatalf("%d cells differ, %d errors", differ, errs)
	}
	// Without a URL a broker cell is an error, not a pass.
	o.AMQPURL = ""
	if r := Run(context.Background(), o); r.Cells[0].Observed != Error {
		t.Fatalf("no URL: observed %s, want an error", r.Cells[0].Observed)
	}
}
