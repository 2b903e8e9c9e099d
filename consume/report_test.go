package consume_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

func TestWriteReport(t *testing.T) {
	cfg := fast(consume.RabbitMQ, brokerURL(t, consume.RabbitMQ), 9)
	cfg.Recovery, cfg.Faults.CrashBeforeAck = true, 1
	res, err := consume.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := consume.WriteReport(dir, res, reports.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Verdict != string(res.Report.Verdict) || sum.Counts.Calls != res.Stats.Deliveries {
		t.Fatalf("summary verdict %q, %d calls; want %q and %d deliveries", sum.Verdict, sum.Counts.Calls, res.Report.Verdict, res.Stats.Deliveries)
	}
	h, err := history.DecodeFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != len(res.History.Ops) {
		t.Fatalf("history.jsonl has %d ops, the run %d", len(h.Ops), len(res.History.Ops))
	}
	for _, name := range []string{"consume.json", "summary.json", "report.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	var out strings.Builder
	if err := consume.WriteSummary(&out, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verdict: ok", "1 crashes before ack", "redeliveries: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
