//go:build unix

package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// The README's command blocks are run by TestREADME; the conventions are
// written at the top of README.md, in an HTML comment:
//
//	<!-- test: exit 1 slow needs=redis append="--duration 1s" -->
//	```sh
//	idembench run --engine naive/check-then-act --scenario duplicates
//	```
//
// Every ```sh block carries a marker; `<!-- test: no REASON -->` keeps a
// block from running, except in the quick start and the job sections.

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's matrix table from docs/matrix.md")

// jobSections are the README sections whose command blocks must all run.
var jobSections = []string{
	"Quick start",
	"Check my HTTP API",
	"Gate my own store in CI",
	"Choose a backend",
	"Run the safety matrix",
	"Test consumers on a broker",
	"Operate the engine",
}

// needEnv maps a `needs=` name to the variable that points at its server.
var needEnv = map[string]string{
	"redis":    "IDEM_REDIS_URL",
	"postgres": "IDEM_POSTGRES_URL",
	"amqp":     "IDEM_AMQP_URL",
	"nats":     "IDEM_NATS_URL",
}

// commandTimeout bounds one command of a block, a cold `go run` of a
// target's service included.
const commandTimeout = 2 * time.Minute

// docBlock is one ```sh block of the README and its marker.
type docBlock struct {
	line     int    // line of the opening fence, 1-based
	section  string // the ## heading above it
	run      bool   // false: `test: no`
	exit     int
	slow     bool
	needs    []string
	appended string
	commands []string
}

var markerRE = regexp.MustCompile(`^<!-- test: (.*) -->$`)

// parseMarker reads the text of a `<!-- test: … -->` marker.
func parseMarker(text string) (docBlock, error) {
	var b docBlock
	if text == "no" || strings.HasPrefix(text, "no ") {
		return b, nil
	}
	b.run = true
	rest := text
	if i := strings.Index(rest, `append="`); i >= 0 {
		j := strings.Index(rest[i+len(`append="`):], `"`)
		if j < 0 {
			return b, fmt.Errorf("unterminated append=\" in %q", text)
		}
		b.appended = rest[i+len(`append="`) : i+len(`append="`)+j]
		rest = rest[:i] + rest[i+len(`append="`)+j+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 2 || fields[0] != "exit" {
		return b, fmt.Errorf("marker %q: want `exit N` first", text)
	}
	code, err := strconv.Atoi(fields[1])
	if err != nil {
		return b, fmt.Errorf("marker %q: exit code: %v", text, err)
	}
	b.exit = code
	for _, f := range fields[2:] {
		switch {
		case f == "slow":
			b.slow = true
		case strings.HasPrefix(f, "needs="):
			for _, n := range strings.Split(strings.TrimPrefix(f, "needs="), ",") {
				if _, ok := needEnv[n]; !ok {
					return b, fmt.Errorf("marker %q: unknown server %q", text, n)
				}
				b.needs = append(b.needs, n)
			}
		default:
			return b, fmt.Errorf("marker %q: unknown option %q", text, f)
		}
	}
	return b, nil
}

// parseREADME returns the README's ```sh blocks with their markers, and an
// error for a block without a marker or a marker without a block.
func parseREADME(src string) ([]docBlock, error) {
	lines := strings.Split(src, "\n")
	var blocks []docBlock
	section := ""
	var pending *docBlock
	inFence := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if inFence {
			if strings.HasPrefix(line, "```") {
				inFence = false
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case markerRE.MatchString(line):
			b, err := parseMarker(markerRE.FindStringSubmatch(line)[1])
			if err != nil {
				return nil, fmt.Errorf("README.md:%d: %v", i+1, err)
			}
			pending = &b
		case line == "```sh":
			if pending == nil {
				return nil, fmt.Errorf("README.md:%d: a sh block without a `<!-- test: … -->` marker", i+1)
			}
			b := *pending
			pending = nil
			b.line, b.section = i+1, section
			var cmd strings.Builder
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				l := stripComment(lines[i])
				if strings.HasSuffix(l, `\`) {
					cmd.WriteString(strings.TrimSuffix(l, `\`))
					continue
				}
				cmd.WriteString(l)
				if c := strings.TrimSpace(cmd.String()); c != "" {
					b.commands = append(b.commands, c)
				}
				cmd.Reset()
			}
			blocks = append(blocks, b)
		case strings.HasPrefix(line, "```"):
			if pending != nil {
				return nil, fmt.Errorf("README.md:%d: a test marker before a %s block: only sh blocks run", i+1, line)
			}
			inFence = true
		case pending != nil && strings.TrimSpace(line) != "":
			return nil, fmt.Errorf("README.md:%d: a test marker not followed by a sh block", i)
		}
	}
	return blocks, nil
}

// stripComment cuts a shell comment (a # outside quotes, after a space or
// at the start) off a command line.
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimRight(line[:i], " \t")
		}
	}
	return line
}

// TestREADMEBlocksParse checks the conventions on the README itself: every
// sh block is marked, the job sections run all of theirs, and a changed exit
// code is a different expectation.
func TestREADMEBlocksParse(t *testing.T) {
	src := readRepoFile(t, "README.md")
	blocks, err := parseREADME(src)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, b := range blocks {
		for _, s := range jobSections {
			if b.section == s {
				seen[s]++
				if !b.run {
					t.Errorf("README.md:%d: section %q has a block marked `test: no`; job sections run every block", b.line, s)
				}
			}
		}
		if b.run && len(b.commands) == 0 {
			t.Errorf("README.md:%d: an empty command block", b.line)
		}
	}
	for _, s := range jobSections {
		if seen[s] == 0 {
			t.Errorf("README.md: section %q has no command block (or its heading changed)", s)
		}
	}
	if qs := blocksIn(blocks, "Quick start"); len(qs) == 0 || qs[0].commands[0] != "go run ./cmd/idembench run" || qs[0].slow || len(qs[0].needs) > 0 {
		t.Errorf("README.md: the quick start must be `go run ./cmd/idembench run`, run always (no slow, no needs)")
	}
	// The parser sees a changed exit code.
	b, err := parseMarker(`exit 3 slow needs=redis append="--duration 1s"`)
	if err != nil || b.exit != 3 || !b.slow || b.needs[0] != "redis" || b.appended != "--duration 1s" {
		t.Errorf("parseMarker: %+v, %v", b, err)
	}
	for _, bad := range []string{"exit", "exit x", "exit 0 fast", "exit 0 needs=mongo", `exit 0 append="x`} {
		if _, err := parseMarker(bad); err == nil {
			t.Errorf("parseMarker(%q): no error", bad)
		}
	}
	if _, err := parseREADME("## A\n\n```sh\nidembench run\n```\n"); err == nil {
		t.Error("an unmarked sh block was accepted")
	}
}

func blocksIn(blocks []docBlock, section string) []docBlock {
	var out []docBlock
	for _, b := range blocks {
		if b.section == section {
			out = append(out, b)
		}
	}
	return out
}

// TestREADME runs every marked command block of README.md with the built
// binaries and checks each command's exit code.
func TestREADME(t *testing.T) {
	root := repoRoot(t)
	blocks, err := parseREADME(readRepoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildDocBinaries(t, root)
	require := os.Getenv("IDEM_REQUIRE_BACKENDS") == "1"
	// Blocks run a few at a time: most of their time is a run's fixed
	// traffic phase, not CPU.
	slots := make(chan struct{}, 3)
	for _, b := range blocks {
		if !b.run {
			continue
		}
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			if b.slow && testing.Short() {
				t.Skipf("README.md:%d (%s): slow block, skipped under -short", b.line, b.section)
			}
			for _, n := range b.needs {
				if os.Getenv(needEnv[n]) == "" {
					msg := fmt.Sprintf("README.md:%d needs %s: set %s", b.line, n, needEnv[n])
					if require {
						t.Fatal(msg + " (IDEM_REQUIRE_BACKENDS=1)")
					}
					t.Skip(msg)
				}
			}
			for _, c := range b.commands {
				cmd := strings.Replace(c, "go run ./cmd/idembench", "idembench", 1)
				if b.appended != "" {
					cmd += " " + b.appended
				}
				code, out := runDocCommand(t, root, bin, cmd)
				if code != b.exit {
					t.Errorf("README.md:%d: %s\nexit %d, the README says %d; output:\n%s", b.line, cmd, code, b.exit, tail(out, 40))
				}
			}
		})
	}
}

// buildDocBinaries builds idembench and idemctl into a temporary directory
// and returns it. It also runs `go run ./examples/httpserver -h`, which
// puts the executable the README's target file starts with go run into the
// build cache: two blocks starting at once would each build and link it.
func buildDocBinaries(t *testing.T, root string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found: cannot build the binaries")
	}
	dir := t.TempDir()
	cmd := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator), "./cmd/idembench", "./cmd/idemctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	warm := exec.Command(gobin, "run", "./examples/httpserver", "-h")
	warm.Dir = root
	if out, err := warm.CombinedOutput(); err != nil && !strings.Contains(string(out), "Usage") {
		t.Fatalf("go run ./examples/httpserver -h: %v\n%s", err, out)
	}
	return dir
}

// runDocCommand runs line with bash in dir, bin first on PATH, killing
// its whole process group at the timeout, and returns the exit code and the
// combined output.
func runDocCommand(t *testing.T, dir, bin, line string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: still running after %v\n%s", line, commandTimeout, tail(out.String(), 40))
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	default:
		t.Fatalf("%s: %v", line, err)
		return -1, ""
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocLinks checks that every relative link and image in README.md,
// CHANGELOG.md and docs/ names a file that exists, and that a #fragment
// into a Markdown file names one of its headings.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range linkRE.FindAllStringSubmatch(withoutFences(string(src)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %v", rel, target, err)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(dest, ".md") {
				body, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				if !headingSlugs(string(body))[frag] {
					t.Errorf("%s: link %q: no heading with anchor #%s", rel, target, frag)
				}
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d links checked: the link pattern no longer matches the docs", checked)
	}
}

// withoutFences blanks fenced code blocks, whose text is not Markdown.
func withoutFences(src string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// headingSlugs returns the anchors GitHub gives the headings of a Markdown
// document: lower case, spaces to hyphens, punctuation dropped, repeats
// numbered.
func headingSlugs(src string) map[string]bool {
	slugs := map[string]bool{}
	count := map[string]int{}
	for _, l := range strings.Split(withoutFences(src), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var s strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				s.WriteRune(r)
			case r == ' ':
				s.WriteByte('-')
			}
		}
		slug := s.String()
		if n := count[slug]; n > 0 {
			slugs[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			slugs[slug] = true
		}
		count[slug]++
	}
	return slugs
}

// matrixCell is one row of docs/matrix.md.
type matrixCell struct {
	config, backend, fault, variant, observed string
	match                                     bool
}

// readMatrix parses the table of docs/matrix.md, the file
// `idembench matrix --out` writes.
func readMatrix(t *testing.T) []matrixCell {
	t.Helper()
	var cells []matrixCell
	for i, l := range strings.Split(readRepoFile(t, "docs/matrix.md"), "\n") {
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| configuration |") {
			continue
		}
		f := strings.Split(l, "|")
		if len(f) != 13 {
			t.Fatalf("docs/matrix.md:%d: %d columns, want 11", i+1, len(f)-2)
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		cells = append(cells, matrixCell{config: f[1], backend: f[2], fault: f[3], variant: f[4], observed: f[7], match: f[8] == "yes"})
	}
	if len(cells) == 0 {
		t.Fatal("docs/matrix.md holds no cells")
	}
	return cells
}

// cellLabel names a cell within its configuration and fault column.
func cellLabel(c matrixCell) string {
	switch {
	case c.variant == "":
		return c.backend
	case strings.HasPrefix(c.variant, c.backend):
		return c.variant
	default:
		return c.backend + " (" + c.variant + ")"
	}
}

// matrixTable renders docs/matrix.md's cells as one row per configuration
// and one column per fault: a verdict where every cell agrees, else which
// cells are unsafe and which safe.
func matrixTable(cells []matrixCell) string {
	var configs, faults []string
	type key struct{ config, fault string }
	group := map[key][]matrixCell{}
	seenConfig, seenFault := map[string]bool{}, map[string]bool{}
	matched := 0
	for _, c := range cells {
		if !seenConfig[c.config] {
			seenConfig[c.config] = true
			configs = append(configs, c.config)
		}
		if !seenFault[c.fault] {
			seenFault[c.fault] = true
			faults = append(faults, c.fault)
		}
		group[key{c.config, c.fault}] = append(group[key{c.config, c.fault}], c)
		if c.match {
			matched++
		}
	}
	var b strings.Builder
	b.WriteString("| configuration | " + strings.Join(faults, " | ") + " |\n|---|")
	b.WriteString(strings.Repeat("---|", len(faults)) + "\n")
	for _, cfg := range configs {
		b.WriteString("| " + cfg)
		for _, f := range faults {
			g := group[key{cfg, f}]
			var unsafe, safe []string
			differ := 0
			for _, c := range g {
				if c.observed == "unsafe" {
					unsafe = append(unsafe, cellLabel(c))
				} else {
					safe = append(safe, cellLabel(c))
				}
				if !c.match {
					differ++
				}
			}
			var text string
			switch {
			case len(g) == 0:
				text = "—"
			case len(safe) == 0:
				text = "unsafe"
			case len(unsafe) == 0:
				text = "safe"
			default:
				text = "unsafe: " + strings.Join(unsafe, ", ") + "; safe: " + strings.Join(safe, ", ")
			}
			if differ > 0 {
				text += fmt.Sprintf(" **(%d differ)**", differ)
			}
			b.WriteString(" | " + text)
		}
		b.WriteString(" |\n")
	}
	fmt.Fprintf(&b, "\n%d cells, %d observed as expected.\n", len(cells), matched)
	return b.String()
}

const (
	matrixBegin = "<!-- matrix-table: begin -->\n"
	matrixEnd   = "<!-- matrix-table: end -->"
)

// TestREADMEMatrixTable keeps the README's matrix table equal to the one
// generated from docs/matrix.md; -update-readme rewrites it.
func TestREADMEMatrixTable(t *testing.T) {
	src := readRepoFile(t, "README.md")
	i, j := strings.Index(src, matrixBegin), strings.Index(src, matrixEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md: no %q … %q block", strings.TrimSpace(matrixBegin), matrixEnd)
	}
	want := matrixTable(readMatrix(t))
	got := src[i+len(matrixBegin) : j]
	if got == want {
		return
	}
	if *updateREADME {
		updated := src[:i+len(matrixBegin)] + want + src[j:]
		if err := os.WriteFile(filepath.Join(repoRoot(t), "README.md"), []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's matrix table differs from docs/matrix.md; run `go test ./cli -run TestREADMEMatrixTable -update-readme`.\nwant:\n%s\ngot:\n%s", want, got)
}

// TestMatrixTableShowsDifferences: a cell observed otherwise than expected
// is named in the table, so the README cannot hide a failed cell.
func TestMatrixTableShowsDifferences(t *testing.T) {
	cells := []matrixCell{
		{config: "plain sink", backend: "memory", fault: "crash after effect", observed: "unsafe", match: true},
		{config: "plain sink", backend: "redis", fault: "crash after effect", observed: "safe", match: false},
		{config: "plain sink", backend: "redis", fault: "backend restart", variant: "redis aof always", observed: "safe", match: true},
	}
	got := matrixTable(cells)
	for _, want := range []string{"unsafe: memory; safe: redis **(1 differ)**", "| safe |", "3 cells, 2 observed as expected"} {
		if !strings.Contains(got, want) {
			t.Errorf("matrixTable lacks %q:\n%s", want, got)
		}
	}
}
