package reports_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// exampleHistory is 1,000 open-loop calls on distinct keys, one per
// millisecond, each executing its effect and taking 2 ms, except that the driver stalled for 100 ms: the ten calls due during
// the stall's last 10 ms were sent late.
func exampleHistory() *history.History {
	h := &history.History{Header: history.Header{Scenario: "example", Seed: 1, Backend: "memstore"}}
	ms := int64(time.Millisecond)
	for i := range 1000 {
		intended := int64(i) * ms
		call := intended
		if i >= 490 && i < 500 {
			call = 500 * ms
		}
		key, token := fmt.Sprint("k", i), uint64(i+1)
		h.Ops = append(h.Ops,
			history.Op{Kind: history.KindCall, Client: i % 4, Key: key, Intended: intended, Call: call,
				Return: call + 2*ms, Outcome: history.Executed, Resp: "r", Token: token},
			history.Op{Kind: history.KindEffect, Client: i % 4, Key: key, Call: call + ms/2,
				Return: call + ms, Token: token, Applied: true})
	}
	return h
}

func ExampleMeasure() {
	m := reports.Measure(exampleHistory(), reports.MeasureOptions{})
	fmt.Println("calls:", m.Calls, "late sends:", m.LateSends)
	fmt.Println("p50:", m.Overall.Percentile(50).Round(time.Millisecond))
	fmt.Println("max:", m.Overall.Max(), "(measured from the intended send time)")
	// Output:
	// calls: 1000 late sends: 9
	// p50: 2ms
	// max: 12ms (measured from the intended send time)
}

func ExampleWriteRunReport() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	h := exampleHistory()
	h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Key: "k0", Call: 2e9, Return: 2e9 + 1e6,
		Outcome: history.Replayed, Resp: "r", Probe: true}) // a liveness probe, so I6 is checked
	history.SortByCall(h.Ops)
	rep := checker.Check(h, checker.Options{})
	s, err := reports.WriteRunReport(dir, h, rep, reports.Options{
		ReplayCommand: "idembench run --scenario example --seed 1",
		Thresholds:    &reports.Thresholds{MaxP99: 10 * time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("verdict:", s.Verdict)
	for _, m := range s.Thresholds.Misses {
		fmt.Println("missed:", m)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, n := range names {
		fmt.Println(filepath.Base(n))
	}
	// Output:
	// verdict: ok
	// latency-over-time.png
	// latency.png
	// latency.svg
	// report.html
	// report.md
	// summary.json
	// throughput.png
	// throughput.svg
}
