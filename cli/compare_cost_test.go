package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
)

// TestCompareCostOnServers: compare on Redis and PostgreSQL prints the
// cost columns (round trips and server CPU per Do) in compare.md and the
// table, and --json carries each run's cost model.
func TestCompareCostOnServers(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp")
	r := runCLI(t, "compare", "--backends", "redis,postgres", "--scenario", "duplicates", "--duration", "300ms", "--seed", "3",
		"--redis-url", testenv.RedisURL(t), "--postgres-url", testenv.PostgresURL(t), "--json", "--no-progress", "--out", out)
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	var doc struct {
		Runs []struct {
			Label string        `json:"label"`
			Cost  *reports.Cost `json:"cost"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(doc.Runs) != 2 {
		t.Fatalf("%d runs, want 2:\n%s", len(doc.Runs), r.stdout)
	}
	for _, run := range doc.Runs {
		c := run.Cost
		if c == nil || c.DoCalls == 0 || c.RequestsPerDo < 1 || c.RoundTripsPerDo < 1 || c.ServerCPU == "" {
			t.Errorf("%s: cost %+v, want Do calls, ≥ 1 request and round trip per Do and a server CPU source", run.Label, c)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, reports.CompareMarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| round trips/Do | server CPU µs/Do |", "| redis |", "| postgres |", "Server CPU: redis: "} {
		if !strings.Contains(string(md), want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md)
		}
	}
}
