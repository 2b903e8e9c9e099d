package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idembench/idembench/reports"
)

// JSONFile is the machine-readable result of a sweep in its directory.
const JSONFile = "sweep.json"

// Write writes res into dir: sweep.json, capacity.md (the maximum
// sustainable rate per target and every step) and the knee plot
// (knee.png, knee.svg). It returns the Markdown.
func Write(dir string, res *Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sweep: %w", err)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, JSONFile), append(b, '\n'), 0o644)
	}
	if err != nil {
		return "", fmt.Errorf("sweep: %w", err)
	}
	return reports.WriteCapacity(dir, res.CapacityCurves(), res.SLOP99Ms)
}

// CapacityCurves returns the curves in the form package reports draws.
func (r *Result) CapacityCurves() []reports.CapacityCurve {
	out := make([]reports.CapacityCurve, len(r.Curves))
	for i, c := range r.Curves {
		cc := reports.CapacityCurve{Label: c.Label, ClosedLoopPerS: c.ClosedLoop.Achieved, MaxSustainablePerS: c.MaxSustainable,
			RequestsPerDo: c.ClosedLoop.RequestsPerDo(), DollarsPerMillionDo: c.ClosedLoop.DollarsPerMillionDo, Prices: c.ClosedLoop.Prices,
			RoundTripsPerDo: c.ClosedLoop.RoundTripsPerDo(), ServerCPUMicrosPerDo: c.ClosedLoop.ServerCPUMicrosPerDo, ServerCPU: c.ClosedLoop.ServerCPU,
			Outcomes: c.ClosedLoop.Outcomes}
		for _, s := range c.Steps {
			cc.Points = append(cc.Points, reports.CapacityPoint{
				OfferedPerS: s.Offered, AchievedPerS: s.Achieved, P50Ms: s.P50Ms, P99Ms: s.P99Ms, P999Ms: s.P999Ms,
				ErrorRate: s.ErrorRate, Verdict: s.Verdict, Sustainable: s.Sustainable,
			})
		}
		out[i] = cc
	}
	return out
}
