package sweep_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/dynamostore"
	"github.com/idembench/idembench/backends/dynamostore/dynamotest"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/internal/testenv"
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

// TestRedisPostgresCostColumn sweeps Redis and PostgreSQL and checks that
// the cost columns of capacity.md are the closed-loop run's measured
// counts divided by its Do calls, with a line per outcome, and that the
// server CPU column is a figure (Redis) or says n/a and why.
func TestRedisPostgresCostColumn(t *testing.T) {
	var targets []sweep.Target
	for _, b := range []struct {
		backend harness.Backend
		url     string
	}{{harness.Redis, testenv.RedisURL(t)}, {harness.Postgres, testenv.PostgresURL(t)}} {
		targets = append(targets, sweep.Target{Label: string(b.backend), Spec: harness.Spec{Engine: engine(t, "idem"), Backend: b.backend, URL: b.url}})
	}
	res, err := sweep.Run(context.Background(), sweep.Spec{
		Targets: targets, Step: 500 * time.Millisecond, Steps: 1, Lo: 0.2, Hi: 0.4, Seed: 7, SLOP99: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	md := reports.CapacityMarkdownTable(res.CapacityCurves(), res.SLOP99Ms)
	for _, c := range res.Curves {
		s := c.ClosedLoop
		if s.DoCalls == 0 || s.Requests < int64(s.DoCalls) || s.RoundTrips < int64(s.DoCalls) || len(s.Outcomes) != 3 {
			t.Fatalf("%s: closed-loop step without a plausible usage: %+v", c.Label, s)
		}
		cells := fmt.Sprintf(" | %.2f | %.2f | ", float64(s.Requests)/float64(s.DoCalls), float64(s.RoundTrips)/float64(s.DoCalls))
		if row := capacityRow(md, c.Label); !strings.Contains(row, cells) {
			t.Errorf("capacity.md's row of %s is %q, without %q:\n%s", c.Label, row, cells, md)
		}
		var calls int64
		for _, o := range s.Outcomes {
			calls += o.Calls
			if o.Calls > 0 {
				line := fmt.Sprintf("| %s | %s | %d | %.2f | %.2f |", c.Label, o.Outcome, o.Calls, float64(o.Requests)/float64(o.Calls), float64(o.RoundTrips)/float64(o.Calls))
				if !strings.Contains(md, line) {
					t.Errorf("capacity.md lacks %q:\n%s", line, md)
				}
			}
		}
		if calls == 0 || calls > int64(s.DoCalls) {
			t.Errorf("%s: %d calls under an outcome of %d Do calls", c.Label, calls, s.DoCalls)
		}
		if !strings.HasPrefix(s.ServerCPU, "n/a: ") && !(s.ServerCPU != "" && s.ServerCPUMicrosPerDo > 0) {
			t.Errorf("%s: server CPU %q, %g µs/Do: want a source and a figure, or n/a and why", c.Label, s.ServerCPU, s.ServerCPUMicrosPerDo)
		}
		t.Logf("%s: %d Do, %.2f requests and %.2f round trips per Do, server CPU %.1f µs/Do (%s), outcomes %+v",
			c.Label, s.DoCalls, s.RequestsPerDo(), s.RoundTripsPerDo(), s.ServerCPUMicrosPerDo, s.ServerCPU, s.Outcomes)
	}
}

// capacityRow returns the first line of md that starts with label's cell.
func capacityRow(md, label string) string {
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| "+label+" | ") {
			return line
		}
	}
	return ""
}
