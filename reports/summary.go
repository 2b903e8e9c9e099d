package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// SchemaVersion is the version of summary.json this package writes.
// Fields may be added without a bump; a field is never removed, renamed or
// given another meaning without one. ReadSummary refuses newer versions.
const SchemaVersion = 1

// VerdictUnchecked is the Summary verdict of a run that was not checked
// (Report.Verdict was empty).
const VerdictUnchecked = "unchecked"

// Summary is the content of summary.json: the run's identity, its verdict
// and the headline performance figures. doc.go documents every field.
type Summary struct {
	SchemaVersion int `json:"schema_version"`

	Tool          string            `json:"tool"`
	Scenario      string            `json:"scenario"`
	Seed          int64             `json:"seed"`
	Backend       string            `json:"backend"`
	Engine        string            `json:"engine"`
	Options       map[string]string `json:"options"`
	LeaseTTLMs    float64           `json:"lease_ttl_ms"`
	Start         time.Time         `json:"start"`
	DurationS     float64           `json:"duration_s"`
	ReplayCommand string            `json:"replay_command"`
	Machine       Machine           `json:"machine"`

	Verdict          string             `json:"verdict"`
	Invariants       []InvariantSummary `json:"invariants"`
	Violations       []ViolationSummary `json:"violations"`
	InconclusiveKeys []string           `json:"inconclusive_keys"`
	Notes            []string           `json:"notes"`

	Counts   Counts         `json:"counts"`
	Outcomes map[string]int `json:"outcomes"`

	ThroughputPerS float64          `json:"throughput_per_s"`
	SuccessPerS    float64          `json:"success_per_s"`
	ErrorRate      float64          `json:"error_rate"`
	LateSends      LateSends        `json:"late_sends"`
	Latency        LatencySummary   `json:"latency"`
	Spectrum       []SpectrumPoint  `json:"spectrum"`
	FaultWindows   []WindowSummary  `json:"fault_windows"`
	Timeline       TimelineSummary  `json:"timeline"`
	Thresholds     *ThresholdResult `json:"thresholds,omitempty"`
	// Cost is what the store asked of its backend, when it counts its
	// requests (Options.Cost); nil otherwise.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is the cost model of a run: the backend requests and capacity units
// the store used for the run's Do calls (clients' calls and probes), and,
// for a backend billed per request, the bill at the price table Prices
// names.
type Cost struct {
	DoCalls    int     `json:"do_calls"`
	Requests   int64   `json:"requests"`
	ReadUnits  float64 `json:"read_units"`
	WriteUnits float64 `json:"write_units"`
	Dollars    float64 `json:"dollars"`
	Prices     string  `json:"prices,omitempty"`
	// RequestsPerDo and DollarsPerMillionDo divide by DoCalls (zero when
	// there was no call).
	RequestsPerDo       float64 `json:"requests_per_do"`
	DollarsPerMillionDo float64 `json:"dollars_per_million_do"`
	// RoundTrips (0: not counted) and the server's CPU seconds, as
	// ServerCPU names their source ("n/a: why" when the server exposes
	// none), also divided by DoCalls.
	RoundTrips           int64   `json:"round_trips,omitempty"`
	RoundTripsPerDo      float64 `json:"round_trips_per_do,omitempty"`
	ServerCPUSeconds     float64 `json:"server_cpu_s,omitempty"`
	ServerCPUMicrosPerDo float64 `json:"server_cpu_us_per_do,omitempty"`
	ServerCPU            string  `json:"server_cpu,omitempty"`
	// Outcomes splits the cost by what each Do's claim found (first
	// execution, replay, conflict), each divided by its own calls.
	Outcomes []OutcomeCost `json:"outcomes,omitempty"`
}

// OutcomeCost is the cost of the Do calls of one outcome.
type OutcomeCost struct {
	Outcome         string  `json:"outcome"`
	Calls           int64   `json:"calls"`
	Requests        int64   `json:"requests"`
	RoundTrips      int64   `json:"round_trips"`
	RequestsPerDo   float64 `json:"requests_per_do"`
	RoundTripsPerDo float64 `json:"round_trips_per_do"`
}

// InvariantSummary is one checker.InvariantResult.
type InvariantSummary struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Checked      int    `json:"checked"`
	Violations   int    `json:"violations"`
	Inconclusive int    `json:"inconclusive"`
}

// ViolationSummary is one checker.Violation without its operations.
type ViolationSummary struct {
	Invariant string `json:"invariant"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	Message   string `json:"message"`
	// Ops counts the operations the checker listed for it.
	Ops int `json:"ops"`
	// Visualization is the Porcupine HTML file, relative to the report
	// directory when written by WriteRunReport; empty when none.
	Visualization string `json:"visualization"`
}

// Counts are the op counts of the run.
type Counts struct {
	Calls      int `json:"calls"`
	Completed  int `json:"completed"`
	Unmeasured int `json:"unmeasured"`
	Successes  int `json:"successes"`
	Errors     int `json:"errors"`
	Probes     int `json:"probes"`
	Effects    int `json:"effects"`
	Faults     int `json:"faults"`
	// FaultKinds counts the faults by kind (history.FaultKind); faults
	// of a history written before fault ops carried their kind are in
	// Faults only.
	FaultKinds map[string]int `json:"fault_kinds,omitempty"`
}

// FaultsByKind returns the faults of c by kind, as "crash 6, pause 5",
// with those of no kind last as "other N"; "" without faults.
func (c Counts) FaultsByKind() string {
	by := history.FaultCounts{}
	other := c.Faults
	for k, n := range c.FaultKinds {
		by[history.FaultKind(k)] = n
		other -= n
	}
	if other > 0 {
		by[""] = other
	}
	return by.String()
}

// LateSends describes how punctually an open-loop driver sent requests.
type LateSends struct {
	OpenLoopCalls int     `json:"open_loop_calls"`
	Count         int     `json:"count"`
	SlackMs       float64 `json:"slack_ms"`
	MaxDelayMs    float64 `json:"max_delay_ms"`
}

// LatencySummary holds the latency figures overall, per outcome (every
// name of Outcomes is present) and per phase (before, during, after).
type LatencySummary struct {
	Overall   LatencyStats            `json:"overall"`
	ByOutcome map[string]LatencyStats `json:"by_outcome"`
	ByPhase   map[string]LatencyStats `json:"by_phase"`
}

// WindowSummary is one fault window in seconds since the run's origin.
type WindowSummary struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Kind   string  `json:"kind,omitempty"`
	Label  string  `json:"label"`
	Client int     `json:"client"`
}

// TimelineSummary is the per-bucket series of the run.
type TimelineSummary struct {
	BucketS   float64   `json:"bucket_s"`
	SpanS     float64   `json:"span_s"`
	Completed []int     `json:"completed"`
	Errors    []int     `json:"errors"`
	P99Ms     []float64 `json:"p99_ms"`
}

// NewSummary builds the Summary of a measured run. rep may be nil or hold
// an empty Verdict: the verdict is then VerdictUnchecked. The machine is
// opts.Machine, or CurrentMachine when nil; thresholds are checked when
// opts.Thresholds is set. Visualization paths are copied as they are.
func NewSummary(m *Measurement, rep *checker.Report, opts Options) *Summary {
	hd := m.Header
	overall := &m.Overall
	if opts.Overall != nil {
		overall = opts.Overall
	}
	s := &Summary{
		SchemaVersion:  SchemaVersion,
		Tool:           hd.Tool,
		Scenario:       hd.Scenario,
		Seed:           hd.Seed,
		Backend:        hd.Backend,
		Engine:         hd.Engine,
		Options:        map[string]string{},
		LeaseTTLMs:     ms(hd.LeaseTTL),
		Start:          hd.Start,
		DurationS:      roundTo(m.Duration.Seconds(), 6),
		ReplayCommand:  opts.ReplayCommand,
		Verdict:        VerdictUnchecked,
		ThroughputPerS: roundTo(m.Throughput(), 3),
		SuccessPerS:    roundTo(m.SuccessThroughput(), 3),
		ErrorRate:      roundTo(m.ErrorRate(), 6),
		Counts: Counts{
			Calls: m.Calls, Completed: m.Completed, Unmeasured: overall.Unmeasured(),
			Successes: m.Successes, Errors: m.Errors,
			Probes: m.Probes, Effects: m.Effects, Faults: m.Faults,
		},
		LateSends: LateSends{
			OpenLoopCalls: m.OpenLoop, Count: m.LateSends,
			SlackMs: ms(m.LateSlack), MaxDelayMs: ms(m.MaxSendDelay),
		},
		Outcomes: map[string]int{},
		Latency: LatencySummary{
			Overall:   overall.Stats(),
			ByOutcome: map[string]LatencyStats{},
			ByPhase:   map[string]LatencyStats{},
		},
		Spectrum:     overall.Spectrum(),
		FaultWindows: []WindowSummary{},
		Timeline:     timelineSummary(&m.Timeline),
	}
	for k, v := range hd.Options {
		s.Options[k] = v
	}
	if opts.Machine != nil {
		s.Machine = *opts.Machine
	} else {
		s.Machine = CurrentMachine()
	}
	for _, o := range Outcomes {
		s.Outcomes[o.String()] = m.ByOutcome(o).Calls
		s.Latency.ByOutcome[o.String()] = m.ByOutcome(o).Stats()
	}
	for _, p := range Phases {
		s.Latency.ByPhase[p.String()] = m.ByPhase(p).Stats()
	}
	for _, w := range m.Windows {
		s.FaultWindows = append(s.FaultWindows, WindowSummary{
			StartS: roundTo(w.StartS, 6), EndS: roundTo(w.EndS, 6), Kind: string(w.Kind), Label: w.Label, Client: w.Client,
		})
		if w.Kind != "" {
			if s.Counts.FaultKinds == nil {
				s.Counts.FaultKinds = map[string]int{}
			}
			s.Counts.FaultKinds[string(w.Kind)]++
		}
	}
	if opts.Cost != nil {
		c := *opts.Cost
		c.DoCalls = m.Calls + m.Probes
		if c.DoCalls > 0 {
			c.RequestsPerDo = roundTo(float64(c.Requests)/float64(c.DoCalls), 4)
			c.DollarsPerMillionDo = c.Dollars / float64(c.DoCalls) * 1e6
			c.RoundTripsPerDo = roundTo(float64(c.RoundTrips)/float64(c.DoCalls), 4)
			c.ServerCPUMicrosPerDo = roundTo(c.ServerCPUSeconds*1e6/float64(c.DoCalls), 2)
		}
		c.Outcomes = slices.Clone(c.Outcomes)
		for i, o := range c.Outcomes {
			if o.Calls > 0 {
				c.Outcomes[i].RequestsPerDo = roundTo(float64(o.Requests)/float64(o.Calls), 4)
				c.Outcomes[i].RoundTripsPerDo = roundTo(float64(o.RoundTrips)/float64(o.Calls), 4)
			}
		}
		s.Cost = &c
	}
	if s.Spectrum == nil {
		s.Spectrum = []SpectrumPoint{}
	}
	s.setCheck(rep)
	if opts.Thresholds != nil {
		s.Thresholds = opts.Thresholds.result(s)
	}
	return s
}

// setCheck copies the checker's verdict, invariants, violations and notes.
func (s *Summary) setCheck(rep *checker.Report) {
	s.Invariants = []InvariantSummary{}
	s.Violations = []ViolationSummary{}
	s.InconclusiveKeys = []string{}
	s.Notes = []string{}
	if rep == nil || rep.Verdict == "" {
		s.Verdict = VerdictUnchecked
		return
	}
	s.Verdict = string(rep.Verdict)
	for _, ir := range rep.Invariants {
		s.Invariants = append(s.Invariants, InvariantSummary{
			ID: string(ir.Invariant), Name: ir.Invariant.Name(),
			Checked: ir.Checked, Violations: ir.Violations, Inconclusive: ir.Inconclusive,
		})
	}
	for _, v := range rep.Violations {
		s.Violations = append(s.Violations, ViolationSummary{
			Invariant: string(v.Invariant), Name: v.Invariant.Name(), Key: v.Key,
			Message: v.Message, Ops: len(v.Ops), Visualization: v.VisualizationPath,
		})
	}
	s.InconclusiveKeys = append(s.InconclusiveKeys, rep.InconclusiveKeys...)
	s.Notes = append(s.Notes, rep.Notes...)
}

// ViolationCount returns the number of violations found, which may exceed
// len(Violations) when the checker capped the list.
func (s *Summary) ViolationCount() int {
	n := 0
	for _, ir := range s.Invariants {
		n += ir.Violations
	}
	return max(n, len(s.Violations))
}

func timelineSummary(t *Timeline) TimelineSummary {
	ts := TimelineSummary{
		BucketS:   t.Bucket.Seconds(),
		SpanS:     roundTo(t.Span.Seconds(), 6),
		Completed: append([]int{}, t.Completed...),
		Errors:    append([]int{}, t.Errors...),
		P99Ms:     make([]float64, len(t.P99)),
	}
	for i, d := range t.P99 {
		ts.P99Ms[i] = ms(d)
	}
	return ts
}

// EncodeSummary writes s to w as indented JSON followed by a newline.
func EncodeSummary(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// DecodeSummary reads a summary written by EncodeSummary. Unknown fields
// are ignored (they were added by a newer writer of the same version); a
// schema_version of 0 or above SchemaVersion is an error.
func DecodeSummary(r io.Reader) (*Summary, error) {
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("reports: summary: %w", err)
	}
	if s.SchemaVersion < 1 || s.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("reports: summary schema_version %d not supported (this build reads 1 to %d)", s.SchemaVersion, SchemaVersion)
	}
	return &s, nil
}

// WriteSummaryFile writes s to path (see EncodeSummary), replacing it.
func WriteSummaryFile(path string, s *Summary) error {
	return writeFile(path, func(w io.Writer) error { return EncodeSummary(w, s) })
}

// ReadSummaryFile reads a summary.json (see DecodeSummary).
func ReadSummaryFile(path string) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := DecodeSummary(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
