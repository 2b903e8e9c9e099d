package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestInvokedAs: the replay line names the command that was run: go run
// of the package from the build cache, the bare name found on $PATH, or
// the path as typed.
func TestInvokedAs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "idembench")
	other := filepath.Join(dir, "other", "idembench")
	for _, p := range []string{bin, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(os.TempDir(), "go-build")
	cache := filepath.Join(dir, "cache", "go-build")
	dirs := []string{tmp, cache}
	work := &debug.BuildInfo{Path: "github.com/idembench/idembench/cmd/idembench", Main: debug.Module{Path: "github.com/idembench/idembench", Version: "(devel)"}}
	tagged := &debug.BuildInfo{Path: "github.com/idembench/idembench/cmd/idembench", Main: debug.Module{Path: "github.com/idembench/idembench", Version: "v0.4.0"}}
	author := &debug.BuildInfo{Path: "example.com/mystore", Main: debug.Module{Path: "example.com/mystore"}}
	onPath := func(found string) func(string) string {
		return func(name string) string {
			if name == "idembench" {
				return found
			}
			return ""
		}
	}
	goRunExe := tmp + "123456/b001/exe/idembench"
	cases := []struct {
		name      string
		exe, arg0 string
		bi        *debug.BuildInfo
		path      string // what $PATH finds for idembench
		want      string
	}{
		{"go run from a clone", goRunExe, goRunExe, work, "", "go run ./cmd/idembench"},
		{"go run, cached executable", filepath.Join(cache, "27", "abc-d", "idembench"), "x", work, "", "go run ./cmd/idembench"},
		{"go run of a version", goRunExe, goRunExe, tagged, "", "go run github.com/idembench/idembench/cmd/idembench@v0.4.0"},
		{"go run of a store author's main", tmp + "9/b001/exe/mystore", "mystore", author, "", "go run ."},
		{"installed on PATH", bin, "idembench", work, bin, "idembench"},
		{"a path that is the one on PATH", bin, bin, work, bin, "idembench"},
		{"a path, another one on PATH", bin, "./bin/idembench", work, other, "./bin/idembench"},
		{"a path, none on PATH", bin, "bin/idembench", work, "", "bin/idembench"},
		{"a path with a space", "/opt/my tools/idembench", "/opt/my tools/idembench", work, "", "'/opt/my tools/idembench'"},
		{"a test binary is not go run", tmp + "1/b001/cli.test", tmp + "1/b001/cli.test", work, "", tmp + "1/b001/cli.test"},
		{"no build info", goRunExe, goRunExe, nil, "", goRunExe},
	}
	for _, c := range cases {
		if got := commandName(c.exe, c.arg0, dirs, c.bi, onPath(c.path)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// In this test binary: not go run, and the path as given.
	if got := invokedAs(); strings.HasPrefix(got, "go run") || got != os.Args[0] && got != "'"+os.Args[0]+"'" {
		t.Errorf("invokedAs in a test binary: %q, want %q", got, os.Args[0])
	}
}

// TestReplayLineNamesTheProgram: a run prints its replay line, and writes
// it into summary.json, starting with the command that ran it.
func TestReplayLineNamesTheProgram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := runCLI(t, "run", "--scenario", "duplicates", "--duration", "200ms", "--seed", "3", "--out", dir, "--no-progress")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.err)
	}
	want := "replay: " + invokedAs() + " run --scenario duplicates"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), strings.TrimPrefix(want, "replay: ")) {
		t.Errorf("summary.json's replay_command does not start with %q", invokedAs())
	}
}
