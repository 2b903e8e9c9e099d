package blackbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// ReportCardFile is the run directory's report card: one row per property
// of an idempotency layer, each pass, fail or not tested, with the
// evidence. Two cards compare side by side (idembench compare A B).
const ReportCardFile = "report-card.json"

// CardSchemaVersion is the version of the report card's schema.
const CardSchemaVersion = 1

// Card row statuses.
const (
	CardPass      = "pass"
	CardFail      = "fail"
	CardNotTested = "not-tested"
)

// Card is a report card (ReportCardFile).
type Card struct {
	SchemaVersion int    `json:"schema_version"`
	Target        string `json:"target"`
	Profile       string `json:"profile"`
	Seed          int64  `json:"seed"`
	// Verdict is the run's verdict, Headline its line.
	Verdict  string `json:"verdict"`
	Headline string `json:"headline"`
	// Faults lists the fault kinds the run injected.
	Faults        []string  `json:"faults"`
	ReplayCommand string    `json:"replay_command,omitempty"`
	Rows          []CardRow `json:"rows"`
}

// CardRow is one property of a report card.
type CardRow struct {
	// ID names the property for machines (CardProperties).
	ID       string `json:"id"`
	Property string `json:"property"`
	// Status is CardPass, CardFail or CardNotTested.
	Status   string `json:"status"`
	Evidence string `json:"evidence"`
}

// CardProperties lists the ids of a report card's rows, in order, with
// what each says.
var CardProperties = [][2]string{
	{"atomic-claim", "atomic claim under racing duplicates"},
	{"replay-fidelity", "replay fidelity: status, body, Location/ETag/Content-Type byte-exact"},
	{"mismatch", "mismatch answer on a reused key with another body (422)"},
	{"concurrent", "409 or a wait on a concurrent duplicate"},
	{"key-scoping", "key scoping by path and tenant"},
	{"error-policy", "5xx policy of the declared profile"},
	{"stuck-after-kill", "no key stuck after a kill"},
	{"dropped-replies", "no double execution under dropped replies"},
	{"kill-restart", "no double execution under kill and restart"},
	{"pause", "no double execution under pause"},
}

// buildCard grades the properties of CardProperties from out: the probes,
// the invariants and the faults the run injected.
func buildCard(t *Target, spec *Spec, out *Outcome) *Card {
	c := &Card{SchemaVersion: CardSchemaVersion, Target: t.Name, Profile: t.Conformance.Profile, Seed: spec.Seed,
		Verdict: string(out.Verdict), Headline: Headline(out), ReplayCommand: spec.ReplayCommand, Faults: []string{}}
	var faults history.FaultCounts
	if out.History != nil {
		faults = history.CountFaults(out.History.Ops)
	}
	for k := range faults {
		c.Faults = append(c.Faults, string(k))
	}
	slices.Sort(c.Faults)
	probe := func(id string) (ProbeResult, bool) {
		i := slices.IndexFunc(out.Conformance, func(p ProbeResult) bool { return p.ID == id })
		if i < 0 {
			return ProbeResult{}, false
		}
		return out.Conformance[i], true
	}
	fromProbe := func(id string) (string, string) {
		p, ok := probe(id)
		switch {
		case !ok:
			return CardNotTested, "the conformance probes were skipped"
		case p.Status == ProbeSkipped:
			return CardNotTested, p.Observed
		case p.Status == ProbePass:
			return CardPass, p.ID + ": " + p.Observed
		case p.Status == ProbeDeviation:
			return CardFail, p.ID + ": " + p.Observed + " (declared deviation: " + p.Reason + ")"
		}
		return CardFail, fmt.Sprintf("%s [%s, %s]: %s", p.ID, p.Level, p.Class, p.Observed)
	}
	inv := func(i checker.Invariant) checker.InvariantResult { return out.Check.Result(i) }
	i1 := inv(checker.I1AtMostOnce)
	underFault := func(kind history.FaultKind) (string, string) {
		if faults[kind] == 0 {
			return CardNotTested, fmt.Sprintf("no %s fault in the run (--faults %s)", kind, kind)
		}
		with := strings.Join(c.Faults, ", ")
		if i1.Violations > 0 {
			return CardFail, fmt.Sprintf("I1 broken on %d key(s) in a run with %s faults (not attributed to one fault)", i1.Violations, with)
		}
		return CardPass, fmt.Sprintf("I1 held on %d key(s) through %d %s window(s) (faults of the run: %s)", i1.Checked, faults[kind], kind, with)
	}
	for _, prop := range CardProperties {
		row := CardRow{ID: prop[0], Property: prop[1]}
		switch prop[0] {
		case "atomic-claim":
			p, ok := probe(ProbeConcurrent)
			switch {
			case ok && p.Class == ClassDoubleExecution:
				row.Status, row.Evidence = CardFail, p.ID+": "+p.Observed
			case ok && p.Status != ProbeSkipped:
				row.Status, row.Evidence = CardPass, fmt.Sprintf("%s: no double execution in %d rounds of racing copies (at most %.3f ms apart)", p.ID, raceRounds, p.SpreadMs)
			default:
				row.Status, row.Evidence = CardNotTested, "the conformance probes were skipped"
			}
		case "replay-fidelity":
			row.Status, row.Evidence = fromProbe(ProbeReplay)
			if i3 := inv(checker.I3ReplayConsistency); i3.Violations > 0 {
				row.Status, row.Evidence = CardFail, fmt.Sprintf("I3 broken on %d key(s): a later answer differs from the first; %s", i3.Violations, row.Evidence)
			}
		case "mismatch":
			row.Status, row.Evidence = fromProbe(ProbeMismatch)
		case "concurrent":
			row.Status, row.Evidence = fromProbe(ProbeConcurrent)
		case "key-scoping":
			row.Status, row.Evidence = fromProbe(ProbeIsolation)
		case "error-policy":
			row.Status, row.Evidence = fromProbe(ProbeErrorStored)
			row.Evidence = "profile " + c.Profile + ": " + row.Evidence
		case "stuck-after-kill":
			i6 := inv(checker.I6Liveness)
			switch {
			case faults[history.FaultKill] == 0:
				row.Status, row.Evidence = CardNotTested, "no kill fault in the run (--faults kill)"
			case i6.Violations > 0:
				row.Status, row.Evidence = CardFail, fmt.Sprintf("I6: %d key(s) stuck in progress after the faults healed", i6.Violations)
			default:
				row.Status, row.Evidence = CardPass, fmt.Sprintf("I6: %d liveness probe(s) after %d kill(s), none stuck", i6.Checked, faults[history.FaultKill])
			}
		case "dropped-replies":
			row.Status, row.Evidence = underFault(history.FaultDropReplies)
		case "kill-restart":
			row.Status, row.Evidence = underFault(history.FaultKill)
		case "pause":
			row.Status, row.Evidence = underFault(history.FaultPause)
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// writeCard writes c to dir's ReportCardFile.
func writeCard(dir string, c *Card) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReportCardFile), append(b, '\n'), 0o644)
}

// ReadCard reads a report card file. A file that is not a report card of
// CardSchemaVersion is an error.
func ReadCard(path string) (*Card, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Card
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: not a report card: %w", path, err)
	}
	if c.SchemaVersion != CardSchemaVersion || len(c.Rows) == 0 {
		return nil, fmt.Errorf("%s: not a report card of schema version %d", path, CardSchemaVersion)
	}
	return &c, nil
}

// readCardIn reads dir's report card; nil without error when there is none.
func readCardIn(dir string) (*Card, error) {
	c, err := ReadCard(filepath.Join(dir, ReportCardFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return c, err
}

// WriteCardMarkdown writes the report card section of a report.
func WriteCardMarkdown(w io.Writer, c *Card) {
	fmt.Fprintf(w, "### Report card (%s)\n\n| property | result | evidence |\n|---|---|---|\n", ReportCardFile)
	for _, r := range c.Rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", cell(r.Property), r.Status, cell(r.Evidence))
	}
	fmt.Fprintln(w)
}

func writeCardHTML(w io.Writer, c *Card) {
	fmt.Fprintf(w, "<h3>Report card (%s)</h3>\n<table><tr><th>property</th><th>result</th><th>evidence</th></tr>\n", ReportCardFile)
	for _, r := range c.Rows {
		fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td><td>%s</td></tr>\n", htmlEscape(r.Property), htmlEscape(r.Status), htmlEscape(r.Evidence))
	}
	fmt.Fprintln(w, "</table>")
}

// CompareCards writes a side-by-side Markdown table of cards: one row per
// property, one column per card (named by its target, profile and seed).
// A property one card lacks reads "—".
func CompareCards(w io.Writer, cards []*Card) {
	fmt.Fprint(w, "| property |")
	for _, c := range cards {
		fmt.Fprintf(w, " %s (%s, seed %d) |", cell(c.Target), c.Profile, c.Seed)
	}
	fmt.Fprint(w, "\n|---|")
	for range cards {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, prop := range CardProperties {
		fmt.Fprintf(w, "| %s |", cell(prop[1]))
		for _, c := range cards {
			i := slices.IndexFunc(c.Rows, func(r CardRow) bool { return r.ID == prop[0] })
			if i < 0 {
				fmt.Fprint(w, " — |")
				continue
			}
			fmt.Fprintf(w, " %s: %s |", c.Rows[i].Status, cell(c.Rows[i].Evidence))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| verdict |")
	for _, c := range cards {
		fmt.Fprintf(w, " %s |", cell(c.Headline))
	}
	fmt.Fprintln(w)
}
