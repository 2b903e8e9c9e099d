package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/yamldur"
	"github.com/idembench/idembench/workload"
)

// ErrInvalid wraps every error about a scenario's content.
var ErrInvalid = checker.Classed("invalid scenario", checker.ErrUsage)

// file is the YAML schema of a scenario.
type file struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Duration    duration   `yaml:"duration"`
	Engine      engineYAML `yaml:"engine"`
	Completer   complYAML  `yaml:"completer"`
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
	ClockSkew    duration  `yaml:"clock_skew"`
}

type complYAML struct {
	Count     int      `yaml:"count"`
	Every     duration `yaml:"every"`
	OlderThan duration `yaml:"older_than"`
}

type loadYAML struct {
	Clients  int          `yaml:"clients"`
	Rate     float64      `yaml:"rate"`
	Batch    int          `yaml:"batch"`
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
	AmbiguousRate float64     `yaml:"ambiguous_rate"`
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

// duration is a YAML duration: "250ms", "2s" or 0, never negative.
type duration = yamldur.Duration

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
// Scenario.Source. Errors wrap ErrInvalid and speak of the file, never of
// Go types: an unknown field names the field, its line and the fields its
// place takes; a value of the wrong shape names the field, its line and
// what it takes; a value out of range names the field and the limit.
func Parse(r io.Reader, source string) (*Scenario, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenario: %s: %w", source, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s: larger than the limit of %d bytes", ErrInvalid, source, MaxFileSize)
	}
	m := indexNodes(b)
	if err := schemaErr(b); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, source, err)
	}
	if err := m.scalars(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, source, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: empty file", ErrInvalid, source)
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, source, decodeErr(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: more than one YAML document", ErrInvalid, source)
	}
	s, err := f.scenario(source, m)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, source, err)
	}
	return s, nil
}

// scenario converts and validates a decoded file.
func (f *file) scenario(source string, m nodes) (*Scenario, error) {
	switch {
	case f.Name == "":
		return nil, m.errAt("name", "required")
	case len(f.Name) > MaxNameLen:
		return nil, m.errAt("name", "%d bytes is above the limit of %d", len(f.Name), MaxNameLen)
	case strings.ContainsFunc(f.Name, unicode.IsControl):
		return nil, m.errAt("name", "holds a control character")
	case f.Duration.D <= 0:
		return nil, m.errAt("duration", "required and positive")
	case len(f.Faults) > MaxFaults:
		return nil, m.errAt("faults", "%d entries is above the limit of %d", len(f.Faults), MaxFaults)
	}
	w := &f.Workload
	s := &Scenario{
		Name:        f.Name,
		Description: f.Description,
		Duration:    f.Duration.D,
		Source:      source,
		Engine: workload.EngineSettings{
			LeaseTTL:     f.Engine.LeaseTTL.D,
			Heartbeat:    f.Engine.Heartbeat.d,
			ConflictWait: f.Engine.ConflictWait.D,
			ClockSkew:    f.Engine.ClockSkew.D,
			Retention:    f.Engine.Retention.D,
		},
		Completer: workload.Completer{
			Count: f.Completer.Count, Every: f.Completer.Every.D, OlderThan: f.Completer.OlderThan.D,
		},
		Clients: w.Clients,
		Rate:    w.Rate,
		Batch:   w.Batch,
		Keys: workload.Keys{
			Dist: w.Keys.Dist, Space: w.Keys.Space, ZipfS: w.Keys.ZipfS,
			Concurrent: w.Keys.Concurrent, Delayed: w.Keys.Delayed, Delay: w.Keys.Delay.D,
			DupFraction: w.Keys.DupFraction, MismatchRate: w.Keys.MismatchRate,
		},
		Retry: workload.Retry{
			MaxAttempts: w.Retry.MaxAttempts, Timeout: w.Retry.Timeout.D,
			Backoff: w.Retry.Backoff.D, MaxBackoff: w.Retry.MaxBackoff.D, Jitter: w.Retry.Jitter,
		},
		Business: workload.Business{
			Latency: workload.Latency{
				Dist: w.Business.Latency.Dist, Mean: w.Business.Latency.Mean.D,
				Min: w.Business.Latency.Min.D, Max: w.Business.Latency.Max.D,
			},
			RetryableRate: w.Business.RetryableRate,
			PermanentRate: w.Business.PermanentRate,
			AmbiguousRate: w.Business.AmbiguousRate,
		},
	}
	th := f.Thresholds
	s.Thresholds = Thresholds{MaxP99: th.MaxP99.D, MinThroughput: th.MinThroughput, MaxErrorRate: th.MaxErrorRate}
	if th.MaxP99.D > MaxP99 {
		return nil, m.errAt("thresholds.max_p99", "%s is above the limit of %s", th.MaxP99.D, MaxP99)
	}
	if err := m.finiteIn("thresholds.min_throughput", th.MinThroughput, 0, math.MaxFloat64); err != nil {
		return nil, err
	}
	if err := m.finiteIn("thresholds.max_error_rate", th.MaxErrorRate, 0, 1); err != nil {
		return nil, err
	}
	if f.Engine.LeaseTTL.D <= 0 {
		return nil, m.errAt("engine.lease_ttl", "required and positive")
	}
	if _, set := m["completer"]; set && f.Completer.Count < 1 {
		return nil, m.errAt("completer.count", "%d is below the minimum of 1 (leave the completer out to run none)", f.Completer.Count)
	}
	if _, set := m["workload.clients"]; set && w.Clients < 1 {
		return nil, m.errAt("workload.clients", "%d is below the minimum of 1 (leave the field out for the default, %d)", w.Clients, workload.DefaultClients)
	}
	if _, err := workload.Check(s.Workload(0)); err != nil {
		return nil, m.workloadErr(err)
	}
	for i := range f.Faults {
		p := "faults[" + strconv.Itoa(i) + "]"
		ff, err := f.Faults[i].fault(m, p, s.Duration)
		if err != nil {
			return nil, err
		}
		if err := m.checkFault(i, &ff, s.Duration); err != nil {
			return nil, err
		}
		s.Faults = append(s.Faults, ff)
	}
	return s, nil
}

// fault converts fault entry p of the file for a run of length d: its
// window, fractions of the traffic phase in the file, becomes Start and
// End at d. The engine injects crashes and pauses only.
func (y *faultYML) fault(m nodes, p string, d time.Duration) (chaos.Fault, error) {
	f := chaos.Fault{
		Count:       y.Count,
		Probability: y.Probability,
		Duration:    y.Duration.D,
		ThenFail:    y.ThenFail,
	}
	var err error
	if f.Kind, err = history.ParseFaultKind(y.Kind, history.FaultCrash, history.FaultPause); err != nil {
		return f, m.errAt(p+".kind", "%v", err)
	}
	if y.Point != "" {
		pt, err := chaos.ParsePoint(y.Point)
		if err != nil {
			return f, m.errAt(p+".point", "%v", err)
		}
		f.Point = pt
	}
	from, until := 0.0, 1.0
	switch len(y.Window) {
	case 0:
	case 2:
		from, until = y.Window[0], y.Window[1]
		if !(from >= 0 && until <= 1 && until > from) { // also false for NaN
			return f, m.errAt(p+".window", "want [from, until] with 0 <= from < until <= 1, got %v", y.Window)
		}
	default:
		return f, m.errAt(p+".window", "want two fractions [from, until], got %d values", len(y.Window))
	}
	f.Start, f.End = time.Duration(from*float64(d)), time.Duration(until*float64(d))
	if f.End <= f.Start {
		f.End = f.Start + 1
	}
	if math.IsNaN(f.Probability) || math.IsInf(f.Probability, 0) {
		return f, m.errAt(p+".probability", "%g is not a finite number", f.Probability)
	}
	if err := f.Validate(0); err != nil {
		return f, m.errAt(p, "%v", err)
	}
	return f, nil
}
