package scenarios_test

import (
	"fmt"
	"strings"

	"github.com/idembench/idembench/scenarios"
)

func ExampleBuiltin() {
	s, err := scenarios.Builtin("gc-pause")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name, s.Duration, "lease", s.Engine.LeaseTTL)
	for _, f := range s.Faults {
		fmt.Println(f.Kind, f.Point, f.Duration, "x", f.Count)
	}
	// Output:
	// gc-pause 4s lease 300ms
	// pause before-fn 1.2s x 6
}

// An unknown field is an error that names the field and its line.
func ExampleParse() {
	_, err := scenarios.Parse(strings.NewReader("name: x\nduration: 1s\nengine:\n  lease_tll: 1s\n"), "mine.yaml")
	fmt.Println(err)
	// Output:
	// invalid scenario: mine.yaml: line 4: engine.lease_tll: unknown field (did you mean lease_ttl?); engine takes lease_ttl, heartbeat, conflict_wait, retention, clock_skew
}

// Command-line overrides are pointers, so a flag left out (nil) keeps the
// scenario's value and an explicit zero is checked like any other value.
func ExampleScenario_Apply() {
	s, _ := scenarios.Builtin("default")
	clients, rate := 64, 500.0
	run, err := s.Apply(scenarios.Overrides{Clients: &clients, Rate: &rate})
	fmt.Println(run.Clients, run.Rate, err)
	zero := 0
	_, err = s.Apply(scenarios.Overrides{Clients: &zero})
	fmt.Println(err)
	// Output:
	// 64 500 <nil>
	// invalid scenario: clients: 0 is below the minimum of 1 (leave it out for the scenario's 32)
}

// A value beyond its limit names the line, the field and the limit.
func ExampleParse_limits() {
	_, err := scenarios.Parse(strings.NewReader("name: x\nduration: 1s\nengine: {lease_ttl: 300ms}\nworkload:\n  clients: 10000000\n"), "big.yaml")
	fmt.Println(err)
	// Output:
	// invalid scenario: big.yaml: line 5: workload.clients: 10000000 is above the limit of 10000
}
