package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCtl runs idemctl with args and no store in the environment.
func runCtl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("IDEMCTL_STORE", "")
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestCommandHelpHasExamples: every command's --help works without a
// store and shows two to four example command lines; "idemctl help
// COMMAND" prints the same.
func TestCommandHelpHasExamples(t *testing.T) {
	for _, name := range commandNames() {
		code, out, errs := runCtl(t, name, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d\n%s", name, code, errs)
		}
		_, after, ok := strings.Cut(out, "\nExamples:\n\n")
		var ex []string
		for _, line := range strings.Split(after, "\n") {
			if !strings.HasPrefix(line, "  ") {
				break
			}
			ex = append(ex, strings.TrimSpace(line))
		}
		if !ok || len(ex) < 2 || len(ex) > 4 {
			t.Errorf("%s --help: %d examples, want 2 to 4:\n%s", name, len(ex), out)
		}
		runs := 0
		for _, e := range ex {
			if !strings.Contains(e, "idemctl ") {
				t.Errorf("%s --help: example %q is not an idemctl command line", name, e)
			}
			if strings.Contains(e, " "+name+" ") || strings.HasSuffix(e, " "+name) {
				runs++
			}
		}
		if runs == 0 {
			t.Errorf("%s --help: no example runs idemctl %s:\n%s", name, name, out)
		}
		if hc, hout, _ := runCtl(t, "help", name); hc != exitOK || hout != out {
			t.Errorf("help %s: exit %d, text differs from %s --help:\n%s", name, hc, name, hout)
		}
	}
}

// TestVersionAndHelp: --version prints the version idembench prints,
// help alone and -h print the usage on stdout, and help of an unknown
// command is a usage error naming the commands.
func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := runCtl(t, "--version"); code != exitOK || out != "idemctl devel\n" {
		t.Errorf("--version: exit %d, %q; want \"idemctl devel\" from a work tree", code, out)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		if code, out, _ := runCtl(t, args...); code != exitOK || out != usageText {
			t.Errorf("%v: exit %d, stdout is not the usage:\n%s", args, code, out)
		}
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "inspect", "x"}} {
		code, _, errs := runCtl(t, args...)
		if code != exitUsage || !strings.Contains(errs, "inspect, list, purge, purge-corrupt, release, resolve, stats") {
			t.Errorf("%v: exit %d, want %d naming the commands:\n%s", args, code, exitUsage, errs)
		}
	}
}
