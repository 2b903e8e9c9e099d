package matrix

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
)

// TestOptionsLimits: Validate refuses options past their limits, naming
// the field, and Run runs none of their cells (each is an Error cell).
func TestOptionsLimits(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"negative duration", func(o *Options) { o.Duration = -time.Second }, "Duration -1s"},
		{"long duration", func(o *Options) { o.Duration = 100 * time.Hour }, "Duration 100h0m0s"},
		{"negative check timeout", func(o *Options) { o.CheckTimeout = -time.Second }, "CheckTimeout -1s"},
		{"seed", func(o *Options) { o.Seed = -3 }, "Seed"},
		{"backend", func(o *Options) { o.Backends = []harness.Backend{"mongo"} }, `Backends: "mongo"`},
		{"no engine", func(o *Options) { o.Engine = harness.StoreFactory{} }, "Engine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Options{Engine: engines.Reference(), Backends: []harness.Backend{harness.Memory}, Faults: []Fault{Dup}}
			c.edit(&o)
			err := o.Validate()
			if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate: %v; want a configuration error naming %q", err, c.want)
			}
			ran := 0
			o.Done = func(int, int, *Cell) { ran++ }
			for _, cell := range Run(context.Background(), o).Cells {
				if cell.Observed != Error {
					t.Errorf("cell %s/%s: observed %s, want %s", cell.Config, cell.Fault, cell.Observed, Error)
				}
			}
			if ran != 0 {
				t.Errorf("%d cells ran", ran)
			}
		})
	}
}
