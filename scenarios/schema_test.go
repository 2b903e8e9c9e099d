package scenarios_test

import (
	"strings"
	"testing"
)

// TestParseSpeaksOfTheFile: an unknown field or a value of the wrong
// shape is reported with the field's path and line and what the place
// takes, never with the decoder's Go type names (scenarios.loadYAML,
// float64, []float64).
func TestParseSpeaksOfTheFile(t *testing.T) {
	const base = "name: x\nduration: 1s\nengine:\n  lease_ttl: 100ms\n"
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown workload field", base + "workload:\n  clinets: 3\n",
			[]string{"line 6: workload.clinets: unknown field (did you mean clients?); workload takes clients, rate, batch, keys, retry, business"}},
		{"unknown top field", base + "colour: red\n", []string{"line 5: colour: unknown field; a scenario takes name, description"}},
		{"list for a number", base + "workload:\n  clients: [3]\n", []string{"line 6: workload.clients: want a whole number, not a list"}},
		{"number for fields", base + "workload:\n  keys: 5\n", []string{"line 6: workload.keys: want fields (dist, space", `not "5"`}},
		{"list for fields", "name: x\nduration: 1s\nengine: [1]\n", []string{"line 3: engine: want fields (lease_ttl, heartbeat"}},
		{"text for a list", base + "faults:\n  - kind: pause\n    window: x\n", []string{"line 7: faults[0].window: want a list of numbers"}},
		{"text for a number", base + "workload:\n  rate: fast\n", []string{`line 6: workload.rate: "fast" is not a number`}},
		{"text for true or false", base + "faults:\n  - {kind: pause, then_fail: maybe}\n", []string{`faults[0].then_fail: "maybe" is not true or false`}},
		{"fields for faults", base + "faults: {kind: crash}\n", []string{"line 5: faults: want a list of entries with the fields kind, point"}},
		{"not fields at all", "just text\n", []string{"the file: want fields (name, description"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := parseInvalid(t, c.src, "mine.yaml", c.want)
			for _, goName := range []string{"scenarios.", "YAML", "float64", "unmarshal", "[]"} {
				if strings.Contains(err.Error(), goName) && !strings.Contains(c.src, goName) {
					t.Errorf("error %q names a Go type (%s)", err, goName)
				}
			}
		})
	}
}
