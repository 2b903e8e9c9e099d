package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files of a capacity report (WriteCapacity).
const (
	CapacityPlot     = "knee"        // knee.png / knee.svg
	CapacityMarkdown = "capacity.md" // the table and the plot
)

// CapacityPoint is one load step of a capacity curve.
type CapacityPoint struct {
	OfferedPerS, AchievedPerS float64
	P50Ms, P99Ms, P999Ms      float64
	ErrorRate                 float64
	Verdict                   string
	Sustainable               bool
}

// CapacityCurve is the load steps of one configuration, in the order run,
// with its closed-loop rate and its maximum sustainable rate.
type CapacityCurve struct {
	Label              string
	ClosedLoopPerS     float64
	MaxSustainablePerS float64
	Points             []CapacityPoint
	// RequestsPerDo and DollarsPerMillionDo are the cost model of the
	// closed-loop run, when the store counts its requests (0 otherwise):
	// backend requests per Do call, and the bill of a million Do calls at
	// the price table Prices names.
	RequestsPerDo       float64
	DollarsPerMillionDo float64
	Prices              string
	// RoundTripsPerDo, ServerCPUMicrosPerDo (ServerCPU: its source, or
	// "n/a: why") and Outcomes, the cost by what each Do's claim found,
	// when the store counts them (0, "" and nil otherwise).
	RoundTripsPerDo      float64
	ServerCPUMicrosPerDo float64
	ServerCPU            string
	Outcomes             []OutcomeCost
}

// WriteCapacity writes into dir the knee plot (latency percentiles against
// achieved throughput, one colour per curve: p50 dotted, p99 solid, p99.9
// dashed, the objective as a horizontal line) as knee.png and knee.svg,
// and capacity.md with the table of every step and the maximum sustainable
// rate per curve. sloP99Ms is the objective. The plot is drawn by the
// registered Plotter; without one capacity.md says so instead.
func WriteCapacity(dir string, curves []CapacityCurve, sloP99Ms float64) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("reports: %w", err)
	}
	md := CapacityMarkdownTable(curves, sloP99Ms)
	if p := RegisteredPlotter(); p != nil {
		files, err := p.CapacityPlots(curves, sloP99Ms)
		if err == nil {
			err = writePlots(dir, files)
		}
		if err != nil {
			return "", fmt.Errorf("reports: plot %s: %w", CapacityPlot, err)
		}
		md += "\n![latency against throughput](" + CapacityPlot + ".png)\n"
	} else {
		md += "\n" + noPlots + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, CapacityMarkdown), []byte(md), 0o644); err != nil {
		return "", fmt.Errorf("reports: %w", err)
	}
	return md, nil
}

// CapacityMarkdownTable returns the maximum sustainable rate per curve and
// every step, as Markdown.
func CapacityMarkdownTable(curves []CapacityCurve, sloP99Ms float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Capacity at p99 ≤ %s ms\n\n| configuration | closed-loop calls/s | max sustainable calls/s | requests/Do | round trips/Do | server CPU µs/Do | $ per million Do |\n|---|---|---|---|---|---|---|\n", num(sloP99Ms))
	var prices, cpu []string
	outcomes := false
	for _, c := range curves {
		sus := "none"
		if c.MaxSustainablePerS > 0 {
			sus = num(c.MaxSustainablePerS)
		}
		req, rt, us, cost := "—", "—", "—", "—"
		if c.RequestsPerDo > 0 {
			req = fmt.Sprintf("%.2f", c.RequestsPerDo)
		}
		if c.RoundTripsPerDo > 0 {
			rt = fmt.Sprintf("%.2f", c.RoundTripsPerDo)
		}
		switch {
		case strings.HasPrefix(c.ServerCPU, "n/a"):
			us = "n/a"
			cpu = append(cpu, c.Label+": "+c.ServerCPU)
		case c.ServerCPU != "":
			us = fmt.Sprintf("%.1f", c.ServerCPUMicrosPerDo)
			cpu = append(cpu, c.Label+": "+c.ServerCPU)
		}
		if c.Prices != "" {
			cost = fmt.Sprintf("%.3f", c.DollarsPerMillionDo)
			if !slices.Contains(prices, c.Prices) {
				prices = append(prices, c.Prices)
			}
		}
		outcomes = outcomes || len(c.Outcomes) > 0
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Label, num(c.ClosedLoopPerS), sus, req, rt, us, cost)
	}
	if len(prices)+len(cpu) > 0 || outcomes {
		writeCostNote(&b, "Cost of the closed-loop run, counted at the client", prices, cpu)
	}
	if outcomes {
		b.WriteString("\n| configuration | outcome | Do calls | requests/Do | round trips/Do |\n|---|---|---|---|---|\n")
		for _, c := range curves {
			for _, o := range c.Outcomes {
				req, rt := "—", "—"
				if o.Calls > 0 {
					req, rt = fmt.Sprintf("%.2f", o.RequestsPerDo), fmt.Sprintf("%.2f", o.RoundTripsPerDo)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", c.Label, o.Outcome, o.Calls, req, rt)
			}
		}
	}
	b.WriteString("\n| configuration | offered/s | achieved/s | p50 ms | p99 ms | p99.9 ms | errors | verdict | within objective |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range curves {
		for _, p := range c.Points {
			ok := "no"
			if p.Sustainable {
				ok = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.2f%% | %s | %s |\n", c.Label, num(p.OfferedPerS), num(p.AchievedPerS),
				num(p.P50Ms), num(p.P99Ms), num(p.P999Ms), 100*p.ErrorRate, p.Verdict, ok)
		}
	}
	return b.String()
}
