package sweep_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/dynamostore"
	"github.com/idembench/idembench/backends/dynamostore/dynamotest"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/sweep"
)

// TestDynamoCostColumn sweeps the DynamoDB backend (on the test server
// dynamotest finds or starts) and checks the cost model against a hand
// calculation from the capacity units the run consumed: dollars per
// million Do = (write units × $/M writes + read units × $/M reads) / Do
// calls, at the default price table; and that capacity.md shows it.
func TestDynamoCostColumn(t *testing.T) {
	url := dynamotest.URL(t)
	defer dynamotest.Stop()
	res, err := sweep.Run(context.Background(), sweep.Spec{
		Targets: []sweep.Target{{Label: "dynamodb", Spec: harness.Spec{Engine: engine(t, "idem"), Backend: harness.DynamoDB, URL: url}}},
		Step:    500 * time.Millisecond, Steps: 1, Lo: 0.2, Hi: 0.4, Seed: 7, SLOP99: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Curves[0].ClosedLoop
	if s.DoCalls == 0 || s.Requests < int64(s.DoCalls) || s.WriteUnits <= 0 || s.ReadUnits <= 0 {
		t.Fatalf("closed-loop step without a plausible usage: %+v", s)
	}
	p := engines.DynamoPrices
	if p != dynamostore.DefaultPrices {
		t.Fatalf("engines.DynamoPrices = %+v, want the default table", p)
	}
	byHand := (s.WriteUnits*0.625 + s.ReadUnits*0.125) / float64(s.DoCalls)
	if math.Abs(s.DollarsPerMillionDo-byHand) > 1e-9*max(1, byHand) {
		t.Fatalf("$%.6f per million Do; by hand from %.0f WCU and %.0f RCU over %d calls: $%.6f",
			s.DollarsPerMillionDo, s.WriteUnits, s.ReadUnits, s.DoCalls, byHand)
	}
	md := reports.CapacityMarkdownTable(res.CapacityCurves(), res.SLOP99Ms)
	if !strings.Contains(md, "$ per million Do") || !strings.Contains(md, "2024-11-01") {
		t.Fatalf("capacity.md has no cost column or price date:\n%s", md)
	}
	t.Logf("closed loop: %d Do, %.2f requests/Do, %.2f WCU and %.2f RCU per Do, $%.3f per million Do",
		s.DoCalls, s.RequestsPerDo(), s.WriteUnits/float64(s.DoCalls), s.ReadUnits/float64(s.DoCalls), s.DollarsPerMillionDo)
}
