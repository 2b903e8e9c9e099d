package matrix

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// File names WriteFiles writes.
const (
	MarkdownFile = "matrix.md"
	JSONFile     = "matrix.json"
)

// WriteText prints the cells as an aligned table.
func WriteText(w io.Writer, cells []*Cell) {
	const row = "%-24s %-8s %-21s %-21s %-8s %-12s %-6s %6v %7v  %s\n"
	fmt.Fprintf(w, row, "configuration", "backend", "fault", "variant", "expected", "observed", "match", "faults", "unknown", "violations")
	for _, c := range cells {
		fmt.Fprintf(w, row, c.Config, c.Backend, c.Fault, c.Variant, c.Expected, c.Observed, c.Status(), c.Faults, c.Unknown, strings.Join(c.Invariants, " "))
	}
}

// WriteFiles writes dir/matrix.md and dir/matrix.json.
func WriteFiles(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	quick := ""
	if r.Quick {
		quick = " (--quick)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# idembench safety matrix\n\nSeed %d%s. \"unsafe\" means the harness must find a violation. A cell marked *not run* is not a pass.\n\n", r.Seed, quick)
	b.WriteString("| configuration | backend | fault | variant | injected by | expected | observed | match | faults | unknown calls | violations |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", c.Config, c.Backend, c.Fault, c.Variant, c.How, c.Expected, c.Observed, c.Status(), c.Faults, c.Unknown, strings.Join(c.Invariants, " "))
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, JSONFile), append(js, '\n'), 0o644)
}
