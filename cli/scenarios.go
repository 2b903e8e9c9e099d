package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/idembench/idembench/scenarios"
)

// scenariosCmd is `idembench scenarios`.
type scenariosCmd struct{}

// scenarioJSON is one entry of `idembench scenarios --json`.
type scenarioJSON struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	DurationS   float64 `json:"duration_s"`
	Clients     int     `json:"clients"`
	Rate        float64 `json:"rate"`
	Faults      int     `json:"faults"`
	Source      string  `json:"source"`
}

func (c *scenariosCmd) Run(ctx context.Context, std stdio, g *globals) error {
	var list []scenarioJSON
	width := 0
	for _, name := range scenarios.Names() {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			return fmt.Errorf("built-in scenario %s: %w", name, err)
		}
		list = append(list, scenarioJSON{
			Name: sc.Name, Description: strings.TrimSpace(sc.Description),
			DurationS: sc.Duration.Seconds(), Clients: sc.Clients, Rate: sc.Rate,
			Faults: len(sc.Faults), Source: sc.Source,
		})
		width = max(width, len(sc.Name))
	}
	if g.JSON {
		return writeJSON(std.out, list)
	}
	for _, s := range list {
		fmt.Fprintf(std.out, "%-*s — %s\n", width, s.Name, firstSentence(s.Description))
	}
	return nil
}

// firstSentence returns the opening of s on one line: its first sentence,
// the next ones too while it is shorter than 60 characters, cut at
// maxSummary characters.
func firstSentence(s string) string {
	const maxSummary = 130
	s = strings.Join(strings.Fields(s), " ")
	out := ""
	for s != "" && len(out) < 60 {
		i := strings.Index(s, ". ")
		if i < 0 {
			out, s = strings.TrimSpace(out+" "+s), ""
			break
		}
		out, s = strings.TrimSpace(out+" "+s[:i+1]), s[i+2:]
	}
	if r := []rune(out); len(r) > maxSummary {
		out = strings.TrimRight(string(r[:maxSummary-1]), " ,;:") + "…"
	}
	return out
}

// Help is the detailed help of `idembench scenarios --help`, with examples.
func (c *scenariosCmd) Help() string {
	return `Lists the built-in scenarios, one line each: the name and the opening of
its description. --json prints every field (full description, duration,
clients, rate, number of faults).

Examples:

    idembench scenarios
    idembench scenarios --json | jq -r '.[].name'
    idembench run --scenario retry-storm`
}
