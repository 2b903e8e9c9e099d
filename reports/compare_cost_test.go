package reports

import (
	"strings"
	"testing"
)

// TestCompareRoundTripsAndServerCPU: the comparison shows the round trips
// and server CPU per Do that Redis and PostgreSQL runs count, "n/a" with the
// reason under the table when the server exposes no CPU figure, and "—"
// for a store that counts nothing.
func TestCompareRoundTripsAndServerCPU(t *testing.T) {
	t.Parallel()
	c := Compare([]Run{
		{Label: "memory", Summary: &Summary{Verdict: "ok"}},
		{Label: "redis", Summary: &Summary{Verdict: "ok", Cost: &Cost{
			DoCalls: 100, Requests: 250, RequestsPerDo: 2.5, RoundTrips: 210, RoundTripsPerDo: 2.1,
			ServerCPUSeconds: 0.0043, ServerCPUMicrosPerDo: 43, ServerCPU: "Redis INFO cpu (user + system)",
		}}},
		{Label: "postgres", Summary: &Summary{Verdict: "ok", Cost: &Cost{
			DoCalls: 100, Requests: 270, RequestsPerDo: 2.7, RoundTrips: 270, RoundTripsPerDo: 2.7,
			ServerCPU: "n/a: pg_stat_statements is not loaded (shared_preload_libraries)",
		}}},
	})
	md := c.Markdown()
	for _, want := range []string{
		"| requests/Do | $ per million Do | round trips/Do | server CPU µs/Do |",
		"| memory | ok | 0 | 0 | 0 | 0% | — | — | — | — | — | — | — | — |",
		"| 2.50 | — | 2.10 | 43.0 |",
		"| 2.70 | — | 2.70 | n/a |",
		"Server CPU: redis: Redis INFO cpu (user + system); postgres: n/a: pg_stat_statements is not loaded (shared_preload_libraries).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md)
		}
	}
	txt := c.Text()
	for _, want := range []string{"round trips/Do", "server CPU µs/Do", "43.0", "2.10"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the comparison's text lacks %q:\n%s", want, txt)
		}
	}
}

func TestCompareCostColumns(t *testing.T) {
	t.Parallel()
	c := Compare([]Run{
		{Label: "redis", Summary: &Summary{Verdict: "ok"}},
		{Label: "dynamodb", Summary: &Summary{Verdict: "ok", Cost: &Cost{
			DoCalls: 10, Requests: 25, RequestsPerDo: 2.5, DollarsPerMillionDo: 1.25, Prices: "us-east-1 on-demand (2024-11-01)",
		}}},
	})
	md := c.Markdown()
	for _, want := range []string{"| requests/Do | $ per million Do |", "| — | — |", "| 2.50 | 1.250 |", "Prices: us-east-1 on-demand (2024-11-01)."} {
		if !strings.Contains(md, want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md)
		}
	}
	if txt := Compare([]Run{{Label: "redis", Summary: &Summary{Verdict: "ok"}}}).Text(); strings.Contains(txt, "requests/Do") {
		t.Errorf("a comparison without a cost model has cost columns:\n%s", txt)
	}
}
