package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/workload"
)

// Limits of a scenario file, on top of the workload's (workload.MaxClients
// and the others) and the fault schedule's (chaos.MaxCount and
// chaos.MaxCountPerSecond). The package doc has the whole table.
const (
	// MaxFileSize bounds a scenario file.
	MaxFileSize = 1 << 20
	// MaxNameLen bounds the name field, in bytes.
	MaxNameLen = 100
	// MaxFaults bounds the entries of the faults list.
	MaxFaults = 100
	// MaxPause bounds a pause's duration: a pause holds its execution, and
	// the drain waits for it, so the run lasts at least that long.
	MaxPause = workload.MaxWait
	// MaxP99 bounds thresholds.max_p99 (the range of the latency
	// histograms).
	MaxP99 = 24 * time.Hour
)

// wholeFields are the integer fields: a value that YAML does not read as
// an integer (3.5, "4") is an error, not truncated. Fault entries are
// written faults[].field.
var wholeFields = map[string]bool{
	"workload.clients": true, "workload.batch": true, "workload.keys.space": true, "workload.keys.concurrent": true,
	"workload.keys.delayed": true, "workload.retry.max_attempts": true, "faults[].count": true,
	"completer.count": true,
}

// nodes maps the path of every value of a scenario document
// ("workload.clients", "faults[2].count") to its node, for line numbers.
type nodes map[string]*yaml.Node

// indexNodes walks a parsed document. It returns nil for a document that
// does not parse (the strict decode reports that).
func indexNodes(b []byte) nodes {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	m := nodes{}
	m.walk("", doc.Content[0])
	return m
}

func (m nodes) walk(path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			m[p] = n.Content[i+1]
			m.walk(p, n.Content[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			m[p] = c
			m.walk(p, c)
		}
	}
}

// line returns the line of path's value, or of its closest written parent;
// 0 when none is written.
func (m nodes) line(path string) int {
	for p := path; p != ""; {
		if n, ok := m[p]; ok {
			return n.Line
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// errAt formats an error about the field at path, with its line when the
// file has it.
func (m nodes) errAt(path, format string, args ...any) error {
	msg := path + ": " + fmt.Sprintf(format, args...)
	if l := m.line(path); l > 0 {
		return fmt.Errorf("line %d: %s", l, msg)
	}
	return errors.New(msg)
}

// durationFields are the duration fields, checked like wholeFields.
var durationFields = map[string]bool{
	"duration": true, "engine.lease_ttl": true, "engine.conflict_wait": true, "engine.clock_skew": true, "engine.retention": true,
	"workload.keys.delay": true, "workload.retry.timeout": true, "workload.retry.backoff": true,
	"workload.retry.max_backoff": true, "workload.business.latency.mean": true,
	"workload.business.latency.min": true, "workload.business.latency.max": true,
	"faults[].duration": true, "thresholds.max_p99": true, "completer.every": true, "completer.older_than": true,
}

// scalars checks, before the strict decode, that every integer field holds
// an integer and every duration field a non-negative duration, so that the
// error names the field as well as the line.
func (m nodes) scalars() error {
	paths := slices.Collect(maps.Keys(m))
	slices.SortFunc(paths, func(a, b string) int {
		return cmp.Or(cmp.Compare(m[a].Line, m[b].Line), cmp.Compare(m[a].Column, m[b].Column), strings.Compare(a, b))
	})
	for _, p := range paths {
		n := m[p]
		if n.Kind != yaml.ScalarNode {
			continue
		}
		key := p
		if strings.HasPrefix(p, "faults[") {
			if i := strings.Index(p, "]"); i > 0 {
				key = "faults[]" + p[i+1:]
			}
		}
		switch {
		case wholeFields[key] && n.ShortTag() != "!!int":
			return m.errAt(p, "%q is not a whole number", n.Value)
		case durationFields[key] && n.Value != "0":
			d, err := time.ParseDuration(n.Value)
			if err != nil {
				return m.errAt(p, "%q is not a duration (want e.g. 250ms or 2s)", n.Value)
			}
			if d < 0 {
				return m.errAt(p, "negative duration %s", n.Value)
			}
		}
	}
	return nil
}

// yamlPath maps a workload.FieldError's field to its path in a scenario.
func yamlPath(field string) string {
	if field == "duration" || strings.HasPrefix(field, "engine.") || strings.HasPrefix(field, "completer.") {
		return field
	}
	return "workload." + field
}

// workloadErr rewrites an error of workload.Check about one field with the
// field's path and line in the file.
func (m nodes) workloadErr(err error) error {
	var fe *workload.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return m.errAt(yamlPath(fe.Field), "%s", fe.Problem)
}

// finiteIn checks that x is a finite number in [lo, hi].
func (m nodes) finiteIn(path string, x, lo, hi float64) error {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return m.errAt(path, "%g is not a finite number", x)
	case x < lo || x > hi:
		return m.errAt(path, "%g is not between %g and %g", x, lo, hi)
	}
	return nil
}

// checkFault checks the limits of fault i at a run of duration d: the pause
// length, a finite probability and window, and the count limits of chaos.
func (m nodes) checkFault(i int, f *chaos.Fault, d time.Duration) error {
	p := "faults[" + strconv.Itoa(i) + "]"
	if f.Duration > MaxPause {
		return m.errAt(p+".duration", "%s is above the limit of %s", f.Duration, MaxPause)
	}
	if f.Count > chaos.MaxCount {
		return m.errAt(p+".count", "%d is above the limit of %d", f.Count, chaos.MaxCount)
	}
	s := Scenario{Duration: d, Faults: []chaos.Fault{*f}}
	if _, err := chaos.New(s.ChaosConfig(1, d)); errors.Is(err, chaos.ErrLimit) {
		return m.errAt(p+".count", "%v (at the scenario's duration %s)", strings.TrimPrefix(err.Error(), "fault 1: "), d)
	}
	return nil
}

// Overrides are a caller's replacements for a scenario's values, such as
// command-line flags. A nil field is not set, so an explicit zero can be
// told from a flag that was left out.
type Overrides struct {
	// Duration replaces the traffic phase's length.
	Duration *time.Duration
	// Clients replaces the number of clients; 0 is an error.
	Clients *int
	// Rate replaces the open-loop rate; 0 means closed loop.
	Rate *float64
	// CheckTimeout is the checker's linearizability budget: it is not
	// part of a scenario, but it is checked here too (positive, at most
	// MaxCheckTimeout), as the command line needs.
	CheckTimeout *time.Duration
	// ClockSkew replaces the engine's clock skew (engine.clock_skew).
	ClockSkew *time.Duration
}

// MaxCheckTimeout bounds Overrides.CheckTimeout.
const MaxCheckTimeout = time.Hour

// Apply returns a copy of s with the set fields of o in place, after
// checking each against the same limits a scenario file has. Errors wrap
// ErrInvalid and name the field as a flag would ("clients", "rate",
// "duration", "check timeout").
func (s *Scenario) Apply(o Overrides) (*Scenario, error) {
	c := *s
	c.Faults = slices.Clone(s.Faults)
	if o.Duration != nil {
		c.Duration = *o.Duration
		c.Faults = scaleFaults(s.Faults, s.Duration, c.Duration)
	}
	if o.ClockSkew != nil {
		c.Engine.ClockSkew = *o.ClockSkew
	}
	if o.Clients != nil {
		if *o.Clients < 1 {
			return nil, fmt.Errorf("%w: clients: %d is below the minimum of 1 (leave it out for the scenario's %d)", ErrInvalid, *o.Clients, s.clientsOrDefault())
		}
		c.Clients = *o.Clients
	}
	if o.Rate != nil {
		c.Rate = *o.Rate
	}
	if o.CheckTimeout != nil {
		if d := *o.CheckTimeout; d <= 0 || d > MaxCheckTimeout {
			return nil, fmt.Errorf("%w: check timeout: %s is not between 0 (exclusive) and %s", ErrInvalid, d, MaxCheckTimeout)
		}
	}
	if _, err := workload.Check(c.Workload(0)); err != nil {
		var fe *workload.FieldError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, fe.Field, fe.Problem)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := chaos.New(c.ChaosConfig(1, 0)); err != nil {
		return nil, fmt.Errorf("%w: faults at duration %s: %v", ErrInvalid, c.Duration, err)
	}
	return &c, nil
}

func (s *Scenario) clientsOrDefault() int {
	if s.Clients > 0 {
		return s.Clients
	}
	return workload.DefaultClients
}
