package cli

import (
	"encoding/json"
	"io"

	"github.com/idembench/idembench/reports"
)

// textOut is where a command prints its human-readable text: stdout, or
// stderr under --json, so that stdout holds nothing but the JSON document.
func textOut(std stdio, g *globals) io.Writer {
	if g != nil && g.JSON {
		return std.err
	}
	return std.out
}

// writeJSON prints v on w as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeSummaryJSON prints s on std.out when --json is set, in the format
// of summary.json (reports/doc.go documents every field).
func writeSummaryJSON(std stdio, g *globals, s *reports.Summary) error {
	if g == nil || !g.JSON || s == nil {
		return nil
	}
	return reports.EncodeSummary(std.out, s)
}

// comparisonRowJSON is one row of `idembench compare --json`.
type comparisonRowJSON struct {
	Label          string  `json:"label"`
	Dir            string  `json:"dir,omitempty"`
	Ran            bool    `json:"ran"`
	Error          string  `json:"error,omitempty"`
	ExitCode       int     `json:"exit_code"`
	Verdict        string  `json:"verdict,omitempty"`
	Scenario       string  `json:"scenario,omitempty"`
	Backend        string  `json:"backend,omitempty"`
	Engine         string  `json:"engine,omitempty"`
	Seed           int64   `json:"seed,omitempty"`
	Calls          int     `json:"calls"`
	Violations     int     `json:"violations"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	ErrorRate      float64 `json:"error_rate"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	P999Ms         float64 `json:"p99_9_ms"`
	MaxMs          float64 `json:"max_ms"`
	// Cost is the run's cost model (summary.json's cost: requests, round
	// trips and server CPU per Do, the bill at a price table) when its
	// store counts requests.
	Cost *reports.Cost `json:"cost,omitempty"`
}

// comparisonDocJSON is the document `idembench compare --json` prints.
type comparisonDocJSON struct {
	Out      string              `json:"out"`
	ExitCode int                 `json:"exit_code"`
	Runs     []comparisonRowJSON `json:"runs"`
}

func comparisonJSON(cmp reports.Comparison, results []compareResult, out string, code int) comparisonDocJSON {
	doc := comparisonDocJSON{Out: out, ExitCode: code, Runs: []comparisonRowJSON{}}
	rows := cmp.Rows
	for _, r := range results {
		row := comparisonRowJSON{Label: r.Label, Dir: r.Dir, ExitCode: r.Code}
		if r.Err != nil {
			row.Error = r.Err.Error()
		}
		if r.Run != nil && len(rows) > 0 {
			cr := rows[0]
			rows = rows[1:]
			row.Ran = true
			row.Verdict, row.Scenario, row.Backend, row.Engine = cr.Verdict, cr.Scenario, cr.Backend, cr.Engine
			row.Seed = r.Run.Summary.Seed
			row.Calls, row.Violations = cr.Calls, cr.Violations
			row.ThroughputPerS, row.ErrorRate = cr.ThroughputPerS, cr.ErrorRate
			row.P50Ms, row.P99Ms, row.P999Ms, row.MaxMs = cr.P50Ms, cr.P99Ms, cr.P999Ms, cr.MaxMs
			row.Cost = cr.Cost
		}
		doc.Runs = append(doc.Runs, row)
	}
	return doc
}
