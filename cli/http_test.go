package cli

import (
	"strings"
	"testing"
)

// TestHTTPCommand checks `idembench http` end to end against the example
// server it starts from its target file: a pass without a flaw, exit 1 with
// the check-then-act flaw, exit 2 for a missing target file.
func TestHTTPCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts examples/httpserver")
	}
	t.Chdir("..") // the target's start command runs from the repository root
	target := "examples/httpserver/target.yaml"
	ok := runCLI(t, "http", target, "--seed", "2", "--duration", "1s", "--no-save")
	if ok.code != exitOK || !strings.Contains(ok.stdout, "verdict: ok") || !strings.Contains(ok.stdout, "§2.6") {
		t.Fatalf("correct server: exit %d\n%s%s", ok.code, ok.stdout, ok.err)
	}
	bad := runCLI(t, "http", target, "--seed", "2", "--duration", "1s", "--no-save", "--start-arg=--flaw=check-then-act")
	if bad.code != exitViolation || !strings.Contains(bad.stdout, "I1") {
		t.Fatalf("check-then-act: exit %d, want 1 with I1\n%s%s", bad.code, bad.stdout, bad.err)
	}
	if got := runCLI(t, "http", "no/such/target.yaml"); got.code != exitUsage {
		t.Fatalf("missing target: exit %d, want 2\n%s", got.code, got.err)
	}
}
