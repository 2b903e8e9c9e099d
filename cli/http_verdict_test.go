package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idembench/idembench/reports"
)

// httpRun is one `idembench --json http … --out DIR` run: its exit code,
// the --json document, the console text, and the run directory's
// summary.json and report.md.
type httpRun struct {
	code    int
	json    reports.Summary
	console string
	summary *reports.Summary
	report  string
}

func runHTTPJSON(t *testing.T, target string, args ...string) httpRun {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	r := runCLI(t, append([]string{"--json", "http", target, "--seed", "1", "--clients", "4", "--out", out}, args...)...)
	hr := httpRun{code: r.code, console: r.err}
	if err := json.Unmarshal([]byte(r.stdout), &hr.json); err != nil {
		t.Fatalf("exit %d: --json output does not decode: %v\n%s%s", r.code, err, r.stdout, r.err)
	}
	s, err := reports.ReadSummaryFile(filepath.Join(out, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	hr.summary = s
	md, err := os.ReadFile(filepath.Join(out, reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	hr.report = string(md)
	return hr
}

// consoleVerdict returns the verdict word of the console's "verdict:" line.
func consoleVerdict(t *testing.T, console string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^verdict: (\w+)`).FindStringSubmatch(console)
	if m == nil {
		t.Fatalf("no verdict line:\n%s", console)
	}
	return m[1]
}

// TestHTTPOneVerdict: a service whose only fault is a protocol deviation
// (a key shared between paths) gets one verdict everywhere, the console,
// --json, summary.json and report.md's first line, which names the class;
// it exits 6, and 1 under --strict, where the deviation is then listed as
// a violation with the same count everywhere.
func TestHTTPOneVerdict(t *testing.T) {
	_, srv := newIdemToy(t, false)
	target := toyTargetFile(t, srv.URL, "conformance: {isolation_path: /other}\n")
	for _, strict := range []bool{false, true} {
		var args []string
		want, code := "deviation", exitDeviation
		if strict {
			args, want, code = []string{"--strict"}, "violation", exitViolation
		}
		r := runHTTPJSON(t, target, append(args, "--duration", "300ms")...)
		first, _, _ := strings.Cut(r.report, "\n")
		switch {
		case r.code != code:
			t.Errorf("strict=%v: exit %d, want %d\n%s", strict, r.code, code, r.console)
		case consoleVerdict(t, r.console) != want || r.json.Verdict != want || r.summary.Verdict != want:
			t.Errorf("strict=%v: verdicts console %q, --json %q, summary.json %q; want %q", strict,
				consoleVerdict(t, r.console), r.json.Verdict, r.summary.Verdict, want)
		case !strings.Contains(first, "idembench run: "+want+": protocol deviation (isolation)"):
			t.Errorf("strict=%v: report.md's first line %q does not name the verdict and the class", strict, first)
		}
		if strict && (r.summary.ViolationCount() != 1 || len(r.summary.Violations) != 1 || r.json.ViolationCount() != 1) {
			t.Errorf("--strict: exit 1 with %d violations in summary.json (%d listed), %d in --json; want the deviation, once",
				r.summary.ViolationCount(), len(r.summary.Violations), r.json.ViolationCount())
		}
	}
}

// TestHTTPCountsAgree: no exit 1 without the violations listed in
// summary.json, and the same count in the console, --json, summary.json
// and report.md, also when there are more than the checker used to list
// (100 per invariant) and more than report.md lists (50).
func TestHTTPCountsAgree(t *testing.T) {
	_, srv := newIdemToy(t, true)
	target := toyTargetFile(t, srv.URL, "conformance: {skip: true}\n")
	r := runHTTPJSON(t, target, "--duration", "1s")
	if r.code != exitViolation {
		t.Fatalf("double-executing service: exit %d\n%s", r.code, r.console)
	}
	n := r.summary.ViolationCount()
	if n <= 100 {
		t.Fatalf("only %d violations: the test needs more than the checker's old cap", n)
	}
	m := regexp.MustCompile(`(\d+) violations in all`).FindStringSubmatch(r.console)
	var console int
	if m != nil {
		console, _ = strconv.Atoi(m[1])
	}
	mdCount := regexp.MustCompile(`### Violations \(([\d,]+)\)`).FindStringSubmatch(r.report)
	md := -1
	if mdCount != nil {
		md, _ = strconv.Atoi(strings.ReplaceAll(mdCount[1], ",", ""))
	}
	if console != n || r.json.ViolationCount() != n || len(r.json.Violations) != n || len(r.summary.Violations) != n || md != n {
		t.Errorf("counts: console %d, --json %d (%d listed), summary.json %d (%d listed), report.md %d",
			console, r.json.ViolationCount(), len(r.json.Violations), n, len(r.summary.Violations), md)
	}
	more := regexp.MustCompile(`… ([\d,]+) more in summary\.json`).FindStringSubmatch(r.report)
	if more == nil || strings.ReplaceAll(more[1], ",", "") != strconv.Itoa(n-reports.MaxListedViolations) {
		t.Errorf("report.md's unlisted line %v, want %d more", more, n-reports.MaxListedViolations)
	}
}

// TestHTTPRetryFlags: --attempts and --backoff set the client's retries,
// are checked against their limits, and are in the replay command.
func TestHTTPRetryFlags(t *testing.T) {
	_, srv := newIdemToy(t, false)
	target := toyTargetFile(t, srv.URL, "conformance: {skip: true}\n")
	r := runHTTPJSON(t, target, "--duration", "200ms", "--attempts", "9", "--backoff", "7ms")
	if r.code != exitOK || r.summary.Options["attempts"] != "9" || !strings.Contains(r.console, "--attempts 9 --backoff 7ms") {
		t.Errorf("exit %d, attempts %q, console:\n%s", r.code, r.summary.Options["attempts"], r.console)
	}
	for _, bad := range [][]string{{"--attempts", "0"}, {"--attempts", "1001"}, {"--backoff", "-1s"}, {"--backoff", "11m"}} {
		if got := runCLI(t, append([]string{"http", target, "--no-save"}, bad...)...); got.code != exitUsage || !strings.Contains(got.err, bad[0]) {
			t.Errorf("%v: exit %d, want 2 naming the flag\n%s", bad, got.code, got.err)
		}
	}
}

// TestHTTPReportCard: a run writes report-card.json (one row per property,
// pass, fail or not tested, with evidence) and its section in report.md;
// `idembench compare` puts two cards side by side.
func TestHTTPReportCard(t *testing.T) {
	_, good := newIdemToy(t, false)
	_, bad := newIdemToy(t, true)
	var cards []string
	for _, url := range []string{good.URL, bad.URL} {
		out := filepath.Join(t.TempDir(), "run")
		target := toyTargetFile(t, url, "conformance: {isolation_path: /other}\n")
		r := runCLI(t, "http", target, "--seed", "1", "--duration", "300ms", "--clients", "2", "--out", out)
		if r.code == exitUsage || r.code == exitEnvironment {
			t.Fatalf("exit %d\n%s", r.code, r.err)
		}
		card := filepath.Join(out, "report-card.json")
		b, err := os.ReadFile(card)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Rows []struct{ ID, Status, Evidence string } `json:"rows"`
		}
		if err := json.Unmarshal(b, &c); err != nil || len(c.Rows) != 10 {
			t.Fatalf("report-card.json: %v, %d rows", err, len(c.Rows))
		}
		status := map[string]string{}
		for _, row := range c.Rows {
			status[row.ID] = row.Status
			if row.Evidence == "" {
				t.Errorf("row %s has no evidence", row.ID)
			}
		}
		// The correct toy shares keys across paths; the double one
		// executes every request, racing copies and other paths alike.
		wantClaim, wantScope := "pass", "fail"
		if url == bad.URL {
			wantClaim, wantScope = "fail", "pass"
		}
		if status["atomic-claim"] != wantClaim || status["key-scoping"] != wantScope || status["kill-restart"] != "not-tested" {
			t.Errorf("%s: card %v", url, status)
		}
		md, _ := os.ReadFile(filepath.Join(out, reports.MarkdownFile))
		if !strings.Contains(string(md), "### Report card") {
			t.Errorf("report.md has no report card section")
		}
		cards = append(cards, card)
	}
	r := runCLI(t, append([]string{"compare"}, cards...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "| atomic claim under racing duplicates | pass: ") ||
		!strings.Contains(r.stdout, "| fail: concurrent-duplicate") {
		t.Errorf("compare of two cards: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	if r := runCLI(t, "compare", cards[0]); r.code != exitUsage {
		t.Errorf("compare of one card: exit %d, want 2", r.code)
	}
}
