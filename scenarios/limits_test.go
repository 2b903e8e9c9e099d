package scenarios_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/scenarios"
)

// TestParseLimits: each value beyond a documented limit is an error that
// wraps ErrInvalid and names the line, the field and the limit.
func TestParseLimits(t *testing.T) {
	const head = "name: x\nduration: 1s\n"
	const base = head + "engine:\n  lease_ttl: 100ms\n"
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"a thousand completers", base + "completer:\n  count: 1000\n  every: 10ms\n",
			[]string{"line 6", "completer.count", "limit of 100"}},
		{"completer without interval", base + "completer:\n  count: 2\n",
			[]string{"line 6", "completer.every", "required"}},
		{"completer every 1us", base + "completer:\n  count: 1\n  every: 1us\n",
			[]string{"line 7", "completer.every", "minimum of 1ms"}},
		{"completer count zero", base + "completer:\n  count: 0\n  every: 10ms\n",
			[]string{"line 6", "completer.count", "minimum of 1"}},
		{"fractional completer count", base + "completer:\n  count: 1.5\n  every: 10ms\n",
			[]string{"line 6", "completer.count", "whole number"}},
		{"completer older than an hour", base + "completer: {count: 1, every: 10ms, older_than: 1h}\n",
			[]string{"line 5", "completer.older_than", "10m0s"}},
		{"unknown completer field", base + "completer: {count: 1, every: 10ms, period: 1s}\n",
			[]string{"line 5", "period"}},
		{"a billion pauses", base + "faults:\n  - {kind: pause, duration: 1s, count: 1000000000}\n",
			[]string{"line 6", "faults[0].count", "10000"}},
		{"too many for the window", base + "faults:\n  - {kind: crash, count: 5000, window: [0, 0.5]}\n",
			[]string{"line 6", "faults[0].count", "1000 per second"}},
		{"ten million clients", base + "workload:\n  clients: 10000000\n",
			[]string{"line 6", "workload.clients", "10000000", "limit of 10000"}},
		{"lease of 1ns", head + "engine:\n  lease_ttl: 1ns\n",
			[]string{"line 4", "engine.lease_ttl", "10ms"}},
		{"negative rate", base + "workload:\n  rate: -3\n",
			[]string{"line 6", "workload.rate", "negative"}},
		{"NaN rate", base + "workload:\n  rate: .nan\n",
			[]string{"line 6", "workload.rate", "not a finite number"}},
		{"explicit zero clients", base + "workload:\n  clients: 0\n",
			[]string{"line 6", "workload.clients", "minimum of 1"}},
		{"fractional clients", base + "workload:\n  clients: 3.5\n",
			[]string{"line 6", "workload.clients", "3.5", "whole number"}},
		{"fractional batch", base + "workload:\n  batch: 3.5\n",
			[]string{"line 6", "workload.batch", "3.5", "whole number"}},
		{"batch above limit", base + "workload:\n  batch: 5000\n",
			[]string{"line 6", "workload.batch", "limit of 1000"}},
		{"batch with a client timeout", base + "workload:\n  batch: 8\n  retry: {timeout: 1s}\n",
			[]string{"line 6", "workload.batch", "retry.timeout"}},
		{"fractional count", base + "faults:\n  - kind: crash\n    count: 2.5\n",
			[]string{"line 7", "faults[0].count", "whole number"}},
		{"pause of 100000h", base + "faults:\n  - {kind: pause, duration: 100000h, count: 2}\n",
			[]string{"line 6", "faults[0].duration", "10m0s"}},
		{"negative timeout names the field", base + "workload:\n  retry: {timeout: -1s}\n",
			[]string{"line 6", "workload.retry.timeout", "negative"}},
		{"NaN probability", base + "faults:\n  - {kind: crash, probability: .nan}\n",
			[]string{"line 6", "faults[0].probability", "finite"}},
		{"NaN window", base + "faults:\n  - {kind: crash, count: 1, window: [.nan, 0.5]}\n",
			[]string{"line 6", "faults[0].window"}},
		{"NaN error rate", base + "thresholds: {max_error_rate: .nan}\n",
			[]string{"line 5", "thresholds.max_error_rate", "finite"}},
		{"infinite throughput", base + "thresholds: {min_throughput: .inf}\n",
			[]string{"line 5", "thresholds.min_throughput", "finite"}},
		{"huge copies", base + "workload:\n  keys: {concurrent: 5000}\n",
			[]string{"line 6", "workload.keys.concurrent", "100"}},
		{"a week", "name: x\nduration: 168h\nengine: {lease_ttl: 1s}\n",
			[]string{"line 2", "duration", "24h"}},
		{"too many faults", base + "faults:\n" + strings.Repeat("  - {kind: crash, count: 1}\n", 101),
			[]string{"faults", "limit of 100"}},
		{"long name", "name: " + strings.Repeat("n", 101) + "\nduration: 1s\nengine: {lease_ttl: 1s}\n",
			[]string{"line 1", "name", "100"}},
		{"huge file", base + "description: " + strings.Repeat("x", scenarios.MaxFileSize) + "\n",
			[]string{"limit of 1048576 bytes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parseInvalid(t, c.src, "test.yaml", c.want)
		})
	}
}

// parseInvalid parses src, read from file, checks that it fails with an
// error that wraps ErrInvalid and contains each of want, and returns the
// error.
func parseInvalid(t *testing.T, src, file string, want []string) error {
	t.Helper()
	_, err := scenarios.Parse(strings.NewReader(src), file)
	if !errors.Is(err, scenarios.ErrInvalid) {
		t.Fatalf("error %v, want one wrapping ErrInvalid", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	return err
}

// TestParseAtLimits: values at the limits, and absent fields that mean a
// default, are accepted.
func TestParseAtLimits(t *testing.T) {
	src := `name: edge
duration: 1s
engine: {lease_ttl: 10ms, heartbeat: 1ms}
workload:
  clients: 10000
  rate: 1000000
  keys: {concurrent: 100}
faults:
  - {kind: crash, count: 1000}
  - {kind: pause, duration: 10m, count: 1}
`
	s, err := scenarios.Parse(strings.NewReader(src), "edge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients != 10000 || s.Rate != 1e6 || s.Engine.LeaseTTL != 10*time.Millisecond {
		t.Fatalf("loaded %+v", s)
	}
	s, err = scenarios.Parse(strings.NewReader("name: x\nduration: 1s\nengine: {lease_ttl: 1s}\n"), "min.yaml")
	if err != nil || s.Clients != 0 || s.Workload(0).Clients != 0 {
		t.Fatalf("absent clients: %v %+v", err, s)
	}
}

func ptr[T any](v T) *T { return &v }

// TestApply: overrides are checked against the same limits, an explicit
// zero client count is an error, and an unset field keeps the scenario's.
func TestApply(t *testing.T) {
	sc, err := scenarios.Builtin("default")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    scenarios.Overrides
		want string // "" = valid
	}{
		{"nothing set", scenarios.Overrides{}, ""},
		{"clients set", scenarios.Overrides{Clients: ptr(64)}, ""},
		{"zero clients", scenarios.Overrides{Clients: ptr(0)}, "clients: 0 is below the minimum of 1"},
		{"a hundred million clients", scenarios.Overrides{Clients: ptr(100_000_000)}, "limit of 10000"},
		{"negative rate", scenarios.Overrides{Rate: ptr(-3.0)}, "rate: -3 is negative"},
		{"NaN rate", scenarios.Overrides{Rate: ptr(math.NaN())}, "rate: NaN is not a finite number"},
		{"zero rate", scenarios.Overrides{Rate: ptr(0.0)}, ""},
		{"negative check timeout", scenarios.Overrides{CheckTimeout: ptr(-time.Second)}, "check timeout"},
		{"zero check timeout", scenarios.Overrides{CheckTimeout: ptr(time.Duration(0))}, "check timeout"},
		{"zero duration", scenarios.Overrides{Duration: ptr(time.Duration(0))}, "duration"},
		{"short duration, same fault count", scenarios.Overrides{Duration: ptr(time.Millisecond)}, "count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sc.Apply(c.o)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.o.Clients != nil && got.Clients != *c.o.Clients || c.o.Clients == nil && got.Clients != sc.Clients {
					t.Fatalf("clients %d", got.Clients)
				}
				return
			}
			if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalid with %q", err, c.want)
			}
		})
	}
	if sc.Clients != 32 {
		t.Fatalf("Apply changed the scenario: clients %d", sc.Clients)
	}
}

// TestCompleterField: the completer block reaches the workload.
func TestCompleterField(t *testing.T) {
	sc, err := scenarios.Load("abandoned-keys")
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Workload(0).Completer
	if c.Count != 3 || c.Every != 50*time.Millisecond || c.OlderThan != 0 || c.Pass != nil {
		t.Fatalf("abandoned-keys completer = %+v, want 3 every 50ms", c)
	}
	sc, err = scenarios.Load("crash-holder")
	if err != nil {
		t.Fatal(err)
	}
	if c := sc.Workload(0).Completer; c.Count != 0 {
		t.Fatalf("crash-holder runs completers: %+v", c)
	}
}
