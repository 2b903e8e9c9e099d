package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/scenarios"
)

// commandPaths returns every visible command and subcommand as the words
// that name it ("run", "scenarios show"), from the parser Run builds.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	var c commands
	parser, err := kong.New(&c, kong.Vars{"scenarios": "", "engines": "", "version": ""})
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	var walk func(prefix []string, n *kong.Node)
	walk = func(prefix []string, n *kong.Node) {
		for _, ch := range n.Children {
			if ch.Type != kong.CommandNode || ch.Hidden {
				continue
			}
			p := append(slices.Clone(prefix), ch.Name)
			paths = append(paths, p)
			walk(p, ch)
		}
	}
	walk(nil, parser.Model.Node)
	return paths
}

// examplesOf returns the example command lines of a --help text: the
// indented lines of the block after "Examples:".
func examplesOf(help string) []string {
	_, after, ok := strings.Cut(help, "\nExamples:\n\n")
	if !ok {
		return nil
	}
	var ex []string
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		ex = append(ex, strings.TrimSpace(line))
	}
	return ex
}

var exitCodeRE = regexp.MustCompile(`(?:^|, )(\d+) `)

// exitCodesOf returns the codes of the "Exit codes:" paragraph of a
// --help text (kong rewraps it: it is joined back into one line).
func exitCodesOf(help string) []int {
	_, after, ok := strings.Cut(help, "\nExit codes: ")
	if !ok {
		return nil
	}
	para, _, _ := strings.Cut(after, "\n\n")
	para = "Exit codes: " + strings.Join(strings.Fields(para), " ")
	var codes []int
	for _, m := range exitCodeRE.FindAllStringSubmatch(strings.TrimPrefix(para, "Exit codes: "), -1) {
		n, _ := strconv.Atoi(m[1])
		codes = append(codes, n)
	}
	return codes
}

// TestEveryCommandHelpTeaches: every visible command's --help has two to
// four examples, each an idembench command line, and its exit codes, only
// codes idembench returns; "idembench help CMD" prints the same text.
func TestEveryCommandHelpTeaches(t *testing.T) {
	known := []int{exitOK, exitViolation, exitUsage, exitInconclusive, exitThreshold, exitEnvironment, exitDeviation, exitInterrupted}
	paths := commandPaths(t)
	if len(paths) < 12 {
		t.Fatalf("found %d commands, want at least 12: %v", len(paths), paths)
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, append(slices.Clone(p), "--help")...)
			if r.code != exitOK {
				t.Fatalf("%s --help: exit %d\n%s", name, r.code, r.err)
			}
			ex := examplesOf(r.stdout)
			if len(ex) < 2 || len(ex) > 4 {
				t.Errorf("%s --help has %d examples, want 2 to 4:\n%s", name, len(ex), r.stdout)
			}
			for _, e := range ex {
				if !strings.HasPrefix(e, "idembench ") {
					t.Errorf("%s --help: example %q is not an idembench command line", name, e)
				}
			}
			codes := exitCodesOf(r.stdout)
			if !slices.Contains(codes, exitOK) || !slices.Contains(codes, exitUsage) {
				t.Errorf("%s --help: exit codes %v, want 0 and 2 among them:\n%s", name, codes, r.stdout)
			}
			for _, c := range codes {
				if !slices.Contains(known, c) {
					t.Errorf("%s --help names exit code %d, which idembench never returns", name, c)
				}
			}
			h := runCLI(t, append([]string{"help"}, p...)...)
			if h.code != exitOK || h.stdout != r.stdout {
				t.Errorf("help %s: exit %d, and its text differs from %s --help:\n%s", name, h.code, name, cmp.Diff(r.stdout, h.stdout))
			}
		})
	}
}

// TestUsageWithoutArguments: idembench with no arguments, and help alone,
// print the list of commands with the quick start and exit 0 at once
// (no run starts); an unknown command after help is a usage error that
// names the commands.
func TestUsageWithoutArguments(t *testing.T) {
	none := runCLI(t)
	if none.code != exitOK {
		t.Fatalf("no arguments: exit %d\n%s", none.code, none.err)
	}
	for _, want := range []string{"Usage: idembench <command>", "Quick start: idembench run", "scenarios show", "clean", "Exit codes: 0 pass"} {
		if !strings.Contains(none.stdout, want) {
			t.Errorf("usage lacks %q:\n%s", want, none.stdout)
		}
	}
	if strings.Contains(none.stdout+none.err, "seed:") {
		t.Errorf("no arguments started a run:\n%s%s", none.stdout, none.err)
	}
	if h := runCLI(t, "help"); h.code != exitOK || h.stdout != none.stdout {
		t.Errorf("help: exit %d, text differs from no arguments:\n%s", h.code, cmp.Diff(none.stdout, h.stdout))
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "worker"}, {"help", "run", "--json"}} {
		r := runCLI(t, args...)
		if r.code != exitUsage || !strings.Contains(r.err, "run, check, report") {
			t.Errorf("%v: exit %d, want %d and the commands named:\n%s", args, r.code, exitUsage, r.err)
		}
	}
}

// TestEnginesSayWhatIsWrong: every known-bad engine that ships gets one
// line saying its flaw, which names a built-in scenario that catches it;
// --json carries it; an engine this binary does not describe gets none.
func TestEnginesSayWhatIsWrong(t *testing.T) {
	r := runCLI(t, "engines")
	if r.code != exitOK {
		t.Fatalf("engines: exit %d\n%s", r.code, r.err)
	}
	bad := append(naive.Names(), "unfenced-completer")
	scenarioRE := regexp.MustCompile(`\(([a-z-]+)[ :]`)
	for _, d := range bad {
		name := engines.NaivePrefix + d
		flaw := engineFlaws[name]
		if flaw == "" {
			t.Errorf("%s: no line says what it gets wrong", name)
			continue
		}
		if !strings.Contains(r.stdout, name+" ") || !strings.Contains(r.stdout, flaw+"\n") {
			t.Errorf("engines does not print %s with its flaw:\n%s", name, r.stdout)
		}
		m := scenarioRE.FindStringSubmatch(flaw)
		if m == nil || !slices.Contains(scenarios.Names(), m[1]) {
			t.Errorf("%s: %q names no built-in scenario that catches it", name, flaw)
		}
	}
	var list []engineJSON
	j := runCLI(t, "engines", "--json")
	if err := json.Unmarshal([]byte(j.stdout), &list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if want := engineFlaws[e.Name]; e.Name != harness.ReferenceEngine && e.Flaw != want {
			t.Errorf("--json: %s flaw %q, want %q", e.Name, e.Flaw, want)
		}
	}

	var out, errb bytes.Buffer
	mine := harness.StoreFactory{Name: "mystore", Open: engines.Reference().Open}
	if code := Run(context.Background(), []string{"engines"}, &out, &errb, mine); code != exitOK {
		t.Fatalf("engines with mystore: exit %d\n%s", code, errb.String())
	}
	if got := out.String(); got != "mystore  memory, redis, postgres, dynamodb\n" {
		t.Errorf("an engine without a description: %q", got)
	}
}

// TestScenariosShow: show prints each built-in scenario's file byte for
// byte, and it loads back as that scenario; an unknown name exits 2 and
// lists the names.
func TestScenariosShow(t *testing.T) {
	for _, name := range scenarios.Names() {
		r := runCLI(t, "scenarios", "show", name)
		want, err := scenarios.BuiltinYAML(name)
		if err != nil {
			t.Fatal(err)
		}
		if r.code != exitOK || r.stdout != string(want) {
			t.Fatalf("scenarios show %s: exit %d, output differs from the embedded file:\n%s", name, r.code, cmp.Diff(string(want), r.stdout))
		}
		sc, err := scenarios.Parse(strings.NewReader(r.stdout), "shown")
		if err != nil || sc.Name != name {
			t.Fatalf("scenarios show %s does not load back: %v", name, err)
		}
	}
	for _, name := range []string{"nope", "../builtin/default", "builtin/default"} {
		r := runCLI(t, "scenarios", "show", name)
		if r.code != exitUsage || !strings.Contains(r.err, "default, duplicates, gc-pause") {
			t.Errorf("scenarios show %s: exit %d, want %d and the names listed:\n%s", name, r.code, exitUsage, r.err)
		}
	}
	if r := runCLI(t, "scenarios"); r.code != exitOK || !strings.Contains(r.stdout, "gc-pause") {
		t.Errorf("scenarios (the list): exit %d\n%s", r.code, r.stdout)
	}
}
