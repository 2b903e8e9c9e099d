package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/idembench/idembench/blackbox"
)

// cardArgs reports whether args name report card files (idembench http's
// report-card.json, or any file): compare then puts the cards side by side
// instead of comparing run directories. Files and directories together
// are a usage error.
func cardArgs(args []string) (bool, error) {
	files := 0
	for _, a := range args {
		if fi, err := os.Stat(a); err == nil && !fi.IsDir() {
			files++
		}
	}
	switch {
	case files == 0:
		return false, nil
	case files < len(args):
		return false, usage("compare: %s mixes report card files and run directories; give either", strings.Join(args, " "))
	case files < 2:
		return false, usage("compare: one report card; give two or more to compare")
	}
	return true, nil
}

// compareCardFiles prints the report cards at paths side by side (a
// Markdown table on stdout), or under --json the cards themselves.
func compareCardFiles(std stdio, g *globals, paths []string) error {
	var cards []*blackbox.Card
	for _, p := range paths {
		c, err := blackbox.ReadCard(p)
		if err != nil {
			return usage("compare: %v", err)
		}
		cards = append(cards, c)
	}
	if g != nil && g.JSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Cards []*blackbox.Card `json:"cards"`
		}{cards})
	}
	blackbox.CompareCards(std.out, cards)
	fmt.Fprintf(std.err, "compared %d report cards\n", len(cards))
	return nil
}
