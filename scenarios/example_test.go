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
	// invalid scenario: mine.yaml: yaml: unmarshal errors:
	//   line 4: field lease_tll not found in type scenarios.engineYAML
}
