package matrix

import (
	"context"
	"testing"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/internal/testenv"
)

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
