package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/workload"
)

// ErrInvalid wraps every error about a scenario's content.
var ErrInvalid = errors.New("invalid scenario")

// file is the YAML schema of a scenario.
type file struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Duration    duration   `yaml:"duration"`
	Engine      engineYAML `yaml:"engine"`
	Workload    loadYAML   `yaml:"workload"`
	Faults      []faultYML `yaml:"faults"`
	Thresholds  threshYAML `yaml:"thresholds"`
}

type threshYAML struct {
	MaxP99        duration `yaml:"max_p99"`
	MinThroughput float64  `yaml:"min_throughput"`
	MaxErrorRate  float64  `yaml:"max_error_rate"`
}

type engineYAML struct {
	LeaseTTL     duration  `yaml:"lease_ttl"`
	Heartbeat    heartbeat `yaml:"heartbeat"`
	ConflictWait duration  `yaml:"conflict_wait"`
	Retention    duration  `yaml:"retention"`
}

type loadYAML struct {
	Clients  int          `yaml:"clients"`
	Rate     float64      `yaml:"rate"`
	Keys     keysYAML     `yaml:"keys"`
	Retry    retryYAML    `yaml:"retry"`
	Business businessYAML `yaml:"business"`
}

type keysYAML struct {
	Dist         string   `yaml:"dist"`
	Space        int      `yaml:"space"`
	ZipfS        float64  `yaml:"zipf_s"`
	Concurrent   int      `yaml:"concurrent"`
	Delayed      int      `yaml:"delayed"`
	Delay        duration `yaml:"delay"`
	DupFraction  float64  `yaml:"dup_fraction"`
	MismatchRate float64  `yaml:"mismatch_rate"`
}

type retryYAML struct {
	MaxAttempts int      `yaml:"max_attempts"`
	Timeout     duration `yaml:"timeout"`
	Backoff     duration `yaml:"backoff"`
	MaxBackoff  duration `yaml:"max_backoff"`
	Jitter      float64  `yaml:"jitter"`
}

type businessYAML struct {
	Latency       latencyYAML `yaml:"latency"`
	RetryableRate float64     `yaml:"retryable_rate"`
	PermanentRate float64     `yaml:"permanent_rate"`
}

type latencyYAML struct {
	Dist string   `yaml:"dist"`
	Mean duration `yaml:"mean"`
	Min  duration `yaml:"min"`
	Max  duration `yaml:"max"`
}

type faultYML struct {
	Kind        string    `yaml:"kind"`
	Point       string    `yaml:"point"`
	Count       int       `yaml:"count"`
	Probability float64   `yaml:"probability"`
	Window      []float64 `yaml:"window"`
	Duration    duration  `yaml:"duration"`
	ThenFail    bool      `yaml:"then_fail"`
}

// duration is a time.Duration written as "250ms", "2s", or 0.
type duration struct{ d time.Duration }

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 250ms", n.Line)
	}
	if n.Value == "0" {
		*d = duration{}
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 250ms or 2s)", n.Line, n.Value)
	}
	if v < 0 {
		return fmt.Errorf("line %d: negative duration %s", n.Line, n.Value)
	}
	*d = duration{d: v}
	return nil
}

// heartbeat is "on" (default interval), "off", or an interval.
type heartbeat struct {
	d   time.Duration // 0: default; <0: off
	set bool
}

func (h *heartbeat) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: heartbeat: want on, off or an interval", n.Line)
	}
	switch n.Value {
	case "on", "true":
		*h = heartbeat{set: true}
		return nil
	case "off", "false":
		*h = heartbeat{d: -1, set: true}
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v <= 0 {
		return fmt.Errorf("line %d: heartbeat: %q is not on, off or a positive interval", n.Line, n.Value)
	}
	*h = heartbeat{d: v, set: true}
	return nil
}

// LoadFile reads and parses the scenario file at path (see Parse).
func LoadFile(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s, err := Parse(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Parse reads one scenario from r; source names it in errors and in
// Scenario.Source. Errors wrap ErrInvalid: an unknown field names the field
// and its line; a value out of range names the field.
func Parse(r io.Reader, source string) (*Scenario, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("scenario: %s: %w", source, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: empty file", ErrInvalid, source)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, source, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: more than one YAML document", ErrInvalid, source)
	}
	s, err := f.scenario(source, faultLines(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, source, err)
	}
	return s, nil
}

// scenario converts and validates a decoded file.
func (f *file) scenario(source string, lines []int) (*Scenario, error) {
	if f.Name == "" {
		return nil, errors.New("name: required")
	}
	if f.Duration.d <= 0 {
		return nil, errors.New("duration: required and positive")
	}
	w := &f.Workload
	s := &Scenario{
		Name:        f.Name,
		Description: f.Description,
		Duration:    f.Duration.d,
		Source:      source,
		Engine: workload.Engine{
			LeaseTTL:     f.Engine.LeaseTTL.d,
			Heartbeat:    f.Engine.Heartbeat.d,
			ConflictWait: f.Engine.ConflictWait.d,
			Retention:    f.Engine.Retention.d,
		},
		Clients: w.Clients,
		Rate:    w.Rate,
		Keys: workload.Keys{
			Dist: w.Keys.Dist, Space: w.Keys.Space, ZipfS: w.Keys.ZipfS,
			Concurrent: w.Keys.Concurrent, Delayed: w.Keys.Delayed, Delay: w.Keys.Delay.d,
			DupFraction: w.Keys.DupFraction, MismatchRate: w.Keys.MismatchRate,
		},
		Retry: workload.Retry{
			MaxAttempts: w.Retry.MaxAttempts, Timeout: w.Retry.Timeout.d,
			Backoff: w.Retry.Backoff.d, MaxBackoff: w.Retry.MaxBackoff.d, Jitter: w.Retry.Jitter,
		},
		Business: workload.Business{
			Latency: workload.Latency{
				Dist: w.Business.Latency.Dist, Mean: w.Business.Latency.Mean.d,
				Min: w.Business.Latency.Min.d, Max: w.Business.Latency.Max.d,
			},
			RetryableRate: w.Business.RetryableRate,
			PermanentRate: w.Business.PermanentRate,
		},
	}
	th := f.Thresholds
	s.Thresholds = Thresholds{MaxP99: th.MaxP99.d, MinThroughput: th.MinThroughput, MaxErrorRate: th.MaxErrorRate}
	if th.MinThroughput < 0 {
		return nil, fmt.Errorf("thresholds.min_throughput: %g is negative", th.MinThroughput)
	}
	if th.MaxErrorRate < 0 || th.MaxErrorRate > 1 {
		return nil, fmt.Errorf("thresholds.max_error_rate: %g is not between 0 and 1", th.MaxErrorRate)
	}
	if f.Engine.LeaseTTL.d <= 0 {
		return nil, errors.New("engine.lease_ttl: required and positive")
	}
	if w.Clients < 0 {
		return nil, fmt.Errorf("workload.clients: %d is negative", w.Clients)
	}
	for i := range f.Faults {
		ff, err := f.Faults[i].fault(s.Duration)
		if err != nil {
			line := 0
			if i < len(lines) {
				line = lines[i]
			}
			return nil, fmt.Errorf("line %d: faults[%d]: %v", line, i, err)
		}
		s.Faults = append(s.Faults, ff)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func (y *faultYML) fault(d time.Duration) (Fault, error) {
	f := Fault{Fault: chaos.Fault{
		Kind:        chaos.Kind(y.Kind),
		Count:       y.Count,
		Probability: y.Probability,
		Duration:    y.Duration.d,
		ThenFail:    y.ThenFail,
	}}
	if y.Point != "" {
		p, err := chaos.ParsePoint(y.Point)
		if err != nil {
			return f, fmt.Errorf("point: %v", err)
		}
		f.Point = p
	}
	switch len(y.Window) {
	case 0:
	case 2:
		f.From, f.Until = y.Window[0], y.Window[1]
		if f.From < 0 || f.Until > 1 || f.Until <= f.From {
			return f, fmt.Errorf("window: want [from, until] with 0 <= from < until <= 1, got %v", y.Window)
		}
	default:
		return f, fmt.Errorf("window: want two fractions [from, until], got %d values", len(y.Window))
	}
	if err := f.Fault.Validate(0); err != nil {
		return f, err
	}
	return f, nil
}

// validate checks the workload part by building a trial configuration,
// so the scenario loader and the workload agree on what is valid.
func (s *Scenario) validate() error {
	_, err := workload.Check(s.Workload(0))
	return err
}

// faultLines returns the line of each entry of the top-level faults list
// (the strict decode has already succeeded, so b is well-formed).
func faultLines(b []byte) []int {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "faults" {
			var lines []int
			for _, n := range m.Content[i+1].Content {
				lines = append(lines, n.Line)
			}
			return lines
		}
	}
	return nil
}
