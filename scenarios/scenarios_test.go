package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/scenarios"
)

func TestBuiltinsLoad(t *testing.T) {
	names := scenarios.Names()
	for _, want := range []string{"default", "duplicates", "retry-storm", "slow-handler", "gc-pause", "crash-after-effect", "crash-holder", "pause-then-fail"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("built-in scenario %q missing from %v", want, names)
		}
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			s, err := scenarios.Builtin(n)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != n || s.Description == "" || s.Duration <= 0 || s.Engine.LeaseTTL <= 0 {
				t.Fatalf("incomplete scenario: %+v", s)
			}
			cfg := s.ChaosConfig(1, 0)
			if _, err := chaos.New(cfg); err != nil {
				t.Fatalf("fault schedule: %v", err)
			}
			// The schedule must also hold for the short runs tests use.
			if _, err := chaos.New(s.ChaosConfig(1, 500*time.Millisecond)); err != nil {
				t.Fatalf("fault schedule at 500ms: %v", err)
			}
		})
	}
}

func TestDefaultIsQuickStart(t *testing.T) {
	s, err := scenarios.Builtin("default")
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 10*time.Second {
		t.Fatalf("default duration %s, want 10s", s.Duration)
	}
}

func TestLoadPathOrName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.yaml")
	src := `name: mine
duration: 2s
engine: {lease_ttl: 150ms, heartbeat: off, conflict_wait: 50ms}
workload:
  clients: 4
  keys: {dist: zipf, space: 10}
  retry: {max_attempts: 3, timeout: 20ms}
  business: {latency: {dist: fixed, mean: 1ms}}
faults:
  - {kind: pause, duration: 400ms, count: 1, window: [0.2, 0.5]}
  - {kind: crash, point: after-effect, probability: 0.01}
thresholds: {max_p99: 40ms, min_throughput: 500, max_error_rate: 0.02}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine.Heartbeat >= 0 || s.Engine.ConflictWait != 50*time.Millisecond || s.Keys.Space != 10 {
		t.Fatalf("engine/keys not loaded: %+v", s)
	}
	if len(s.Faults) != 2 || s.Faults[1].Point != idem.PointAfterFn || s.Faults[0].Start != 400*time.Millisecond || s.Faults[0].End != time.Second {
		t.Fatalf("faults not loaded: %+v", s.Faults)
	}
	if want := (scenarios.Thresholds{MaxP99: 40 * time.Millisecond, MinThroughput: 500, MaxErrorRate: 0.02}); s.Thresholds != want {
		t.Fatalf("thresholds = %+v, want %+v", s.Thresholds, want)
	}
	cc := s.ChaosConfig(1, 10*time.Second)
	if cc.Faults[0].Start != 2*time.Second || cc.Faults[0].End != 5*time.Second {
		t.Fatalf("window not scaled: %+v", cc.Faults[0])
	}
	if s.Faults[0].Start != 400*time.Millisecond {
		t.Fatalf("ChaosConfig changed the scenario's faults: %+v", s.Faults[0])
	}
	d := 20 * time.Second
	longer, err := s.Apply(scenarios.Overrides{Duration: &d})
	if err != nil {
		t.Fatal(err)
	}
	if f := longer.Faults[0]; f.Start != 4*time.Second || f.End != 10*time.Second || longer.ChaosConfig(1, 0).Faults[0] != f {
		t.Fatalf("--duration 20s: window %s..%s, want 4s..10s", f.Start, f.End)
	}
	bad := strings.Replace(src, "kind: crash", "kind: partition", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Load(path); err == nil || !strings.Contains(err.Error(), "faults[1].kind") || !strings.Contains(err.Error(), "want crash, pause") {
		t.Fatalf("a network fault in a scenario: %v, want an error naming faults[1].kind", err)
	}
	if _, err := scenarios.Load("no-such-scenario"); err == nil || !strings.Contains(err.Error(), "default") {
		t.Fatalf("unknown name: %v (want the list of built-ins)", err)
	}
	if _, err := scenarios.Load(filepath.Join(dir, "absent.yaml")); err == nil {
		t.Fatal("missing file loaded")
	}
}

func TestParseRejects(t *testing.T) {
	const base = "name: x\nduration: 1s\nengine:\n  lease_ttl: 100ms\n"
	cases := []struct {
		name string
		src  string
		want []string // substrings of the error
	}{
		{"unknown top field", base + "colour: red\n", []string{"colour", "line 5"}},
		{"unknown nested field", base + "  heartbeet: on\n", []string{"heartbeet", "line 5"}},
		{"unknown fault field", base + "faults:\n  - kind: crash\n    count: 1\n    pint: after-fn\n", []string{"pint", "line 8"}},
		{"bad duration", "name: x\nduration: soon\n", []string{"line 2", "soon"}},
		{"negative duration", base + "workload:\n  retry: {timeout: -1s}\n", []string{"negative"}},
		{"no name", "duration: 1s\nengine: {lease_ttl: 1s}\n", []string{"name"}},
		{"no lease", "name: x\nduration: 1s\n", []string{"lease_ttl"}},
		{"bad heartbeat", base + "  heartbeat: sometimes\n", []string{"heartbeat", "line 5"}},
		{"heartbeat above ttl", base + "  heartbeat: 1s\n", []string{"heartbeat"}},
		{"bad dist", base + "workload:\n  keys: {dist: normal}\n", []string{"normal"}},
		{"zipf without space", base + "workload:\n  keys: {dist: zipf}\n", []string{"space"}},
		{"bad rate", base + "workload:\n  business: {retryable_rate: 0.8, permanent_rate: 0.5}\n", []string{"rates"}},
		{"bad point", base + "faults:\n  - {kind: crash, point: midway, count: 1}\n", []string{"midway", "line 6"}},
		{"pause after effect", base + "faults:\n  - {kind: pause, point: after-fn, duration: 1s, count: 1}\n", []string{"heartbeat"}},
		{"pause without duration", base + "faults:\n  - {kind: pause, count: 1}\n", []string{"duration"}},
		{"count and probability", base + "faults:\n  - {kind: crash, count: 1, probability: 0.5}\n", []string{"exactly one"}},
		{"bad window", base + "faults:\n  - {kind: crash, count: 1, window: [0.5, 0.2]}\n", []string{"window"}},
		{"bad kind", base + "faults:\n  - {kind: flood, count: 1}\n", []string{"flood"}},
		{"unknown threshold", base + "thresholds: {max_p95: 10ms}\n", []string{"max_p95", "line 5"}},
		{"bad threshold duration", base + "thresholds: {max_p99: fast}\n", []string{"fast", "line 5"}},
		{"negative throughput", base + "thresholds: {min_throughput: -1}\n", []string{"thresholds.min_throughput"}},
		{"error rate above 1", base + "thresholds: {max_error_rate: 2}\n", []string{"thresholds.max_error_rate"}},
		{"two documents", base + "---\nname: y\n", []string{"more than one"}},
		{"empty", "", []string{"empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenarios.Parse(strings.NewReader(c.src), "test.yaml")
			if err == nil {
				t.Fatal("parsed without error")
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
