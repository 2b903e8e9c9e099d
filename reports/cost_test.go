package reports

import (
	"strings"
	"testing"
)

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
