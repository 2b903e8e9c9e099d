package reports

import (
	"encoding/base64"
	"html/template"
	"io"
)

// writeHTML writes report.html: one self-contained file with the figures
// of report.md, the plots embedded as base64 PNG (files holds them by file
// name; none means the program draws no plots, and the page says so), and
// the violations linked to their visualizations by relative path.
func writeHTML(w io.Writer, s *Summary, files map[string][]byte) error {
	type plotImg struct {
		Title, File string
		Src         template.URL
	}
	var plots []plotImg
	for _, p := range []struct{ name, title, file string }{
		{LatencyPlot, "Latency by percentile", LatencyPlot + ".svg"},
		{ThroughputPlot, "Throughput over time", ThroughputPlot + ".svg"},
		{LatencyOverTimePlot, "Latency over time", LatencyOverTimePlot + ".png"},
	} {
		if b := files[p.name+".png"]; len(b) > 0 {
			plots = append(plots, plotImg{p.title, p.file, template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))})
		}
	}
	listed := s.Violations
	if len(listed) > MaxListedViolations {
		listed = listed[:MaxListedViolations]
	}
	data := map[string]any{
		"S":          s,
		"Icon":       htmlVerdictIcons[s.Verdict],
		"Verdict":    verdictText(s),
		"Plots":      plots,
		"NoPlots":    len(files) == 0,
		"NoPlotsWhy": noPlots,
		"Outcomes":   latencyRows(outcomeNames(), s.Latency.ByOutcome),
		"Phases":     latencyRows(phaseNameList(), s.Latency.ByPhase),
		"Listed":     listed,
		"Unlisted":   s.ViolationCount() - len(listed),
		"FaultSecs":  faultSeconds(s),
	}
	return htmlTemplate.Execute(w, data)
}

type latencyRow struct {
	Name string
	LatencyStats
}

func latencyRows(names []string, stats map[string]LatencyStats) []latencyRow {
	var rows []latencyRow
	for _, n := range names {
		if st := stats[n]; st.Calls > 0 {
			rows = append(rows, latencyRow{n, st})
		}
	}
	return rows
}

// htmlVerdictIcons mark the verdict heading of report.html with inline SVG
// (a tick, a cross, an exclamation mark, a dash in a disc of the verdict's
// colour), which needs no emoji font on the reader's machine.
var htmlVerdictIcons = map[string]template.HTML{
	"ok":             verdictSVG("#1a7f37", "M6.5 12.5l3.5 3.5 7.5-8"),
	"violation":      verdictSVG("#cf222e", "M7.5 7.5l9 9M16.5 7.5l-9 9"),
	"inconclusive":   verdictSVG("#9a6700", "M12 6v7.5M12 17v1"),
	VerdictUnchecked: verdictSVG("#6e7781", "M7 12h10"),
}

func verdictSVG(fill, path string) template.HTML {
	return template.HTML(`<svg class="icon" width="24" height="24" viewBox="0 0 24 24" role="img" aria-hidden="true">` +
		`<circle cx="12" cy="12" r="11" fill="` + fill + `"/>` +
		`<path d="` + path + `" stroke="#fff" stroke-width="2.6" stroke-linecap="round" stroke-linejoin="round" fill="none"/></svg> `)
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num": num, "lat": latNum, "count": count, "percent": percent, "inc": func(i int) int { return i + 1 },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>idembench {{.S.Verdict}}: {{.S.Scenario}} on {{.S.Backend}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1180px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h1 svg.icon { vertical-align: -0.15em; width: 1em; height: 1em; } h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; } th { background: #f4f4f4; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { background: #f4f4f4; padding: 0 .2em; }
.verdict-ok { color: #1a7f37; } .verdict-violation { color: #cf222e; } .verdict-inconclusive { color: #9a6700; }
.miss { color: #cf222e; } figure { margin: 1em 0; } img { max-width: 100%; border: 1px solid #eee; }
</style>
</head>
<body>
<h1 class="verdict-{{.S.Verdict}}">{{.Icon}}idembench run: {{.S.Verdict}}</h1>
<p>scenario <code>{{.S.Scenario}}</code> · backend <code>{{.S.Backend}}</code> · engine <code>{{.S.Engine}}</code> · seed {{.S.Seed}}{{if .S.Tool}} · {{.S.Tool}}{{end}}</p>

<h2>Key figures</h2>
<table>
<tr><th>verdict</th><td>{{.Verdict}}</td></tr>
<tr><th>calls</th><td>{{count .S.Counts.Calls}} ({{count .S.Counts.Completed}} completed, {{count .S.Counts.Unmeasured}} never returned)</td></tr>
<tr><th>throughput</th><td>{{num .S.ThroughputPerS}} ops/s (successes {{num .S.SuccessPerS}} ops/s)</td></tr>
<tr><th>error rate</th><td>{{percent .S.ErrorRate}} ({{count .S.Counts.Errors}} calls)</td></tr>
{{with .S.Latency.Overall}}<tr><th>latency p50 / p90 / p99 / p99.9 / max</th><td>{{if .Measured}}{{num .P50Ms}} / {{num .P90Ms}} / {{num .P99Ms}} / {{num .P999Ms}} / {{num .MaxMs}} ms{{else}}— (no call returned){{end}}</td></tr>{{end}}
{{with .S.LateSends}}<tr><th>late sends</th><td>{{if .OpenLoopCalls}}{{count .Count}} of {{count .OpenLoopCalls}} open-loop calls sent more than {{num .SlackMs}} ms late (at most {{num .MaxDelayMs}} ms){{else}}closed loop (no intended send times){{end}}</td></tr>{{end}}
<tr><th>fault windows</th><td>{{len .S.FaultWindows}} ({{num .FaultSecs}} s in total)</td></tr>
<tr><th>probes / effects</th><td>{{count .S.Counts.Probes}} / {{count .S.Counts.Effects}}</td></tr>
<tr><th>duration</th><td>{{num .S.DurationS}} s</td></tr>
</table>

{{if .Listed}}<h2>Violations ({{count .S.ViolationCount}})</h2>
<ul>
{{range .Listed}}<li><b>{{.Invariant}} {{.Name}}</b>, key <code>{{.Key}}</code>: {{.Message}}{{if .Visualization}} (<a href="{{.Visualization}}">visualization</a>){{end}}</li>
{{end}}{{if gt .Unlisted 0}}<li>… {{.Unlisted}} more in summary.json</li>{{end}}
</ul>{{end}}

{{with .S.Thresholds}}<h2>Thresholds: {{if .Passed}}all met{{else}}{{len .Misses}} missed{{end}}</h2>
<p>{{if gt .MaxP99Ms 0.0}}p99 ≤ {{num .MaxP99Ms}} ms. {{end}}{{if gt .MinThroughputPerS 0.0}}throughput ≥ {{num .MinThroughputPerS}} ops/s. {{end}}{{if gt .MaxErrorRate 0.0}}error rate ≤ {{percent .MaxErrorRate}}.{{end}}</p>
{{if .Misses}}<ul>{{range .Misses}}<li class="miss">{{.Reason}}</li>{{end}}</ul>{{end}}{{end}}

<h2>Plots</h2>
{{if .NoPlots}}<p>{{.NoPlotsWhy}}</p>
{{end}}{{range .Plots}}<figure><img src="{{.Src}}" alt="{{.Title}}"><figcaption>{{.Title}} (<a href="{{.File}}">{{.File}}</a>)</figcaption></figure>
{{end}}

<h2>Latency by outcome (ms)</h2>
<table><tr><th>outcome</th><th>calls</th><th>measured</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Outcomes}}<tr><td>{{.Name}}</td><td class="n">{{count .Calls}}</td><td class="n">{{count .Measured}}</td><td class="n">{{lat .Measured .P50Ms}}</td><td class="n">{{lat .Measured .P90Ms}}</td><td class="n">{{lat .Measured .P99Ms}}</td><td class="n">{{lat .Measured .P999Ms}}</td><td class="n">{{lat .Measured .MaxMs}}</td></tr>
{{end}}</table>
{{if .S.FaultWindows}}
<h2>Latency by phase (ms)</h2>
<table><tr><th>phase</th><th>calls</th><th>measured</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td class="n">{{count .Calls}}</td><td class="n">{{count .Measured}}</td><td class="n">{{lat .Measured .P50Ms}}</td><td class="n">{{lat .Measured .P90Ms}}</td><td class="n">{{lat .Measured .P99Ms}}</td><td class="n">{{lat .Measured .P999Ms}}</td><td class="n">{{lat .Measured .MaxMs}}</td></tr>
{{end}}</table>
<h2>Fault windows</h2>
<table><tr><th>#</th><th>start (s)</th><th>end (s)</th><th>fault</th></tr>
{{range $i, $w := .S.FaultWindows}}<tr><td class="n">{{inc $i}}</td><td class="n">{{num $w.StartS}}</td><td class="n">{{num $w.EndS}}</td><td>{{$w.Label}}</td></tr>
{{end}}</table>{{end}}

{{if .S.Invariants}}<h2>Invariants</h2>
<table><tr><th>invariant</th><th>checked</th><th>violations</th><th>inconclusive</th></tr>
{{range .S.Invariants}}<tr><td>{{.ID}} {{.Name}}</td><td class="n">{{count .Checked}}</td><td class="n">{{count .Violations}}</td><td class="n">{{count .Inconclusive}}</td></tr>
{{end}}</table>{{end}}

{{if .S.Notes}}<h2>Notes</h2><ul>{{range .S.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>Reproduce</h2>
<p>Replay: <code>{{if .S.ReplayCommand}}{{.S.ReplayCommand}}{{else}}(not recorded){{end}}</code><br>
Machine: {{.S.Machine.String}}</p>
</body>
</html>
`))
