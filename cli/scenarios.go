package cli

import (
	"fmt"
	"strings"

	"github.com/idembench/idembench/scenarios"
)

// scenariosCmd is `idembench scenarios`: the catalog (list, the default)
// and one scenario's file (show).
type scenariosCmd struct {
	List scenariosListCmd `cmd:"" default:"1" help:"List the built-in scenarios, one line each (the default)."`
	Show scenariosShowCmd `cmd:"" help:"Print a built-in scenario's YAML file, to copy and edit into a scenario of your own."`
}

// scenariosListCmd is `idembench scenarios [list]`.
type scenariosListCmd struct{}

// scenariosShowCmd is `idembench scenarios show NAME`.
type scenariosShowCmd struct {
	Name string `arg:"" help:"Built-in scenario name (${scenarios})." placeholder:"NAME"`
}

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

func (c *scenariosListCmd) Run(std stdio, g *globals) error {
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

func (c *scenariosShowCmd) Run(std stdio) error {
	b, err := scenarios.BuiltinYAML(c.Name)
	if err != nil {
		return usage("scenarios show: %v", err)
	}
	_, err = std.out.Write(b)
	return err
}

// Help is the detailed help of `idembench scenarios --help`, with examples.
func (c *scenariosCmd) Help() string {
	return `Lists the built-in scenarios, one line each: the name and the opening of
its description. --json prints every field (full description, duration,
clients, rate, number of faults). "scenarios show NAME" prints a built-in
scenario's YAML file as it is embedded in the binary: save it, edit it and
pass the file to --scenario (docs/reference/scenario.md lists every field).

Examples:

    idembench scenarios
    idembench scenarios --json | jq -r '.[].name'
    idembench scenarios show gc-pause > my.yaml && idembench run --scenario my.yaml

` + exitHelp(exitOK, exitUsage) + `
2 is also an unknown NAME (the error lists the names).`
}

// Help is the detailed help of `idembench scenarios list --help`.
func (c *scenariosListCmd) Help() string {
	return `Lists the built-in scenarios, one line each: the name and the opening of
its description ("idembench scenarios" alone does the same). --json prints
every field (full description, duration, clients, rate, number of faults).

Examples:

    idembench scenarios
    idembench scenarios --json | jq -r '.[].name'

` + exitHelp(exitOK, exitUsage)
}

// Help is the detailed help of `idembench scenarios show --help`.
func (c *scenariosShowCmd) Help() string {
	return `Prints the YAML file of a built-in scenario, as embedded in the binary,
on stdout: a starting point for a scenario of your own (rename it, edit it,
pass the file to --scenario). docs/reference/scenario.md lists every field
with its type, default and bounds.

Examples:

    idembench scenarios show default
    idembench scenarios show gc-pause > my.yaml && idembench run --scenario my.yaml

` + exitHelp(exitOK, exitUsage) + `
2 is also an unknown NAME (the error lists the names).`
}
