package blackbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// serverBin is examples/httpserver, built once for the package's tests.
var serverBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "blackbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	serverBin = filepath.Join(dir, "httpserver")
	out, err := exec.Command("go", "build", "-o", serverBin, "../examples/httpserver").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build examples/httpserver: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// exampleYAML is the target file of examples/httpserver; %s is the
// binary, %s the extra flags.
const exampleYAML = `
name: payments
start:
  command: [%q, --addr, "{{.Addr}}", --downstream, "{{.DownstreamURL}}"%s]
  ready: /payments/none
  ready_timeout: 20s
operation:
  path: /payments
  headers: {Content-Type: application/json}
  body: '{"amount": {{.Amount}}, "currency": "EUR"}'
  resource_id: /id
  replay_header: "Idempotency-Replayed: true"
oracle:
  kind: downstream
  latency: 2ms
conformance:
  isolation_path: /transfers
  profile: cache-2xx-only
`

// exampleTarget returns the target of examples/httpserver started with
// extra flags ("--flaw", "check-then-act").
func exampleTarget(t testing.TB, extra ...string) *Target {
	t.Helper()
	var flags strings.Builder
	for _, e := range extra {
		fmt.Fprintf(&flags, ", %q", e)
	}
	return mustParseTarget(t, fmt.Sprintf(exampleYAML, serverBin, flags.String()), "example.yaml")
}

// mustParseTarget parses yaml as the target file named file, and ends the
// test if it does not parse.
func mustParseTarget(t testing.TB, yaml, file string) *Target {
	t.Helper()
	tg, err := ParseTarget(strings.NewReader(yaml), file)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
