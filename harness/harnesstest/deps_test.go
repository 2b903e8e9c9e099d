package harnesstest_test

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavyModules are modules a store author's test module must not get by
// importing harnesstest: the plotting of the reports (gonum/plot and its
// fonts, LaTeX, PDF, SVG and raster back ends), the embedded toxiproxy of
// the network faults (with its metrics, logging and HTTP router), and the
// CLI's flag parser. The stock binary links them; harnesstest writes no
// plots and injects no network faults.
var heavyModules = []string{
	"gonum.org/v1/plot",
	"codeberg.org/go-fonts/",
	"codeberg.org/go-latex/",
	"codeberg.org/go-pdf/",
	"git.sr.ht/~sbinet/gg",
	"github.com/ajstarks/svgo",
	"github.com/golang/freetype",
	"golang.org/x/image",
	"github.com/Shopify/toxiproxy",
	"github.com/prometheus/",
	"github.com/rs/zerolog",
	"github.com/gorilla/mux",
	"github.com/alecthomas/kong",
	"github.com/testcontainers/",
	"go.opentelemetry.io/",
}

// TestImportGraphIsLean lists the packages harnesstest links (go list
// -deps) and fails on any package of a heavy module, naming the chain of
// imports that reaches it.
func TestImportGraphIsLean(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: cannot list harnesstest's imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f",
		"{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}\t{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		msg := ""
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, msg)
	}
	imports := map[string][]string{}
	var root string
	var pkgs []string
	modules := map[string]bool{}
	var heavy []string
	firstOf := map[string]string{} // heavy module → its first package listed
	var heavyMods []string
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		path, mod := f[0], f[1]
		pkgs = append(pkgs, path)
		imports[path] = strings.Fields(f[2])
		root = path // -deps lists the named package last
		if mod != "" {
			modules[mod] = true
		}
		if slices.ContainsFunc(heavyModules, func(h string) bool { return strings.HasPrefix(mod, h) }) {
			heavy = append(heavy, path)
			if _, ok := firstOf[mod]; !ok {
				firstOf[mod] = path
				heavyMods = append(heavyMods, mod)
			}
		}
	}
	t.Logf("harnesstest links %d packages of %d modules", len(pkgs), len(modules))
	if !strings.HasSuffix(root, "/harness/harnesstest") {
		t.Fatalf("go list -deps ended with %q, want harnesstest", root)
	}
	if len(heavy) == 0 {
		return
	}
	t.Errorf("harnesstest links %d packages of %d heavy modules: %s", len(heavy), len(heavyMods), strings.Join(heavyMods, ", "))
	for _, m := range heavyMods {
		t.Errorf("%s reached by %s", m, strings.Join(importChain(imports, root, firstOf[m]), " → "))
	}
}

// importChain returns the shortest chain of imports from root to target,
// nil when there is none.
func importChain(imports map[string][]string, root, target string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == target {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}
