package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
)

// TestConsumeCommand runs `consume` on both brokers: the reference engine
// passes with aimed crashes before the ack, the broker alone is caught, and
// the run directory holds the history.
func TestConsumeCommand(t *testing.T) {
	urls := map[string]string{"rabbitmq": testenv.AMQPURL(t), "nats": testenv.NATSURL(t)}
	for broker, url := range urls {
		t.Run(broker, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			ok := runCLI(t, "consume", "--broker", broker, "--url", url, "--messages", "40", "--seed", "7", "--out", out)
			if ok.code != exitOK || !strings.Contains(ok.stdout, "verdict: ok") || !strings.Contains(ok.stdout, "replay: "+invokedAs()+" consume") {
				t.Fatalf("engine run: exit %d\n%s%s", ok.code, ok.stdout, ok.err)
			}
			if _, err := os.Stat(filepath.Join(out, "history.jsonl")); err != nil {
				t.Fatalf("run directory: %v", err)
			}
			bad := runCLI(t, "consume", "--broker", broker, "--url", url, "--messages", "40", "--seed", "7", "--broker-only", "--no-save")
			if bad.code != exitViolation || !strings.Contains(bad.stdout, "I1") {
				t.Fatalf("broker-only run: exit %d, want 1 with I1\n%s%s", bad.code, bad.stdout, bad.err)
			}
		})
	}
	if got := runCLI(t, "consume", "--broker", "rabbitmq", "--url", urls["rabbitmq"], "--messages", "2", "--crash-before-ack", "3", "--no-save"); got.code != exitUsage {
		t.Fatalf("3 crashes over 2 messages: exit %d, want 2\n%s", got.code, got.err)
	}
}

// TestConsumeBatch runs `consume --batch` on both brokers: the reference
// engine passes with aimed crashes, the summary shows the batches, the
// replay line repeats the flag, and a batch above the limit is a usage
// error.
func TestConsumeBatch(t *testing.T) {
	urls := map[string]string{"rabbitmq": testenv.AMQPURL(t), "nats": testenv.NATSURL(t)}
	for broker, url := range urls {
		t.Run(broker, func(t *testing.T) {
			got := runCLI(t, "consume", "--broker", broker, "--url", url, "--messages", "40", "--seed", "3", "--batch", "8", "--no-save")
			if got.code != exitOK || !strings.Contains(got.stdout, "verdict: ok") || !strings.Contains(got.stdout, "batch claims: ") ||
				!strings.Contains(got.stdout, " --batch 8") {
				t.Fatalf("batch run: exit %d\n%s%s", got.code, got.stdout, got.err)
			}
		})
	}
	if got := runCLI(t, "consume", "--broker", "nats", "--url", urls["nats"], "--batch", "501", "--no-save"); got.code != exitUsage {
		t.Fatalf("--batch 501: exit %d, want 2\n%s", got.code, got.err)
	}
}

// TestMatrixBrokerRows runs the quick matrix's consumer cells on RabbitMQ:
// both match (exit 0), and the broker alone is caught.
func TestMatrixBrokerRows(t *testing.T) {
	got := runCLI(t, "matrix", "--quick", "--backends", "rabbitmq", "--amqp-url", testenv.AMQPURL(t), "--seed", "3")
	if got.code != exitOK || !strings.Contains(got.stdout, "broker only (no check)   rabbitmq crash before ack") ||
		!strings.Contains(got.stdout, "2 cells") {
		t.Fatalf("matrix --quick --backends rabbitmq: exit %d\n%s%s", got.code, got.stdout, got.err)
	}
}

// TestConsumeFlagLimits: every numeric flag of consume has a bound its
// help gives; a value beyond it (or an invalid one: NaN, a negative
// duration, --messages 0) is a usage error that names the flag and the
// bound, before anything connects (the broker URL points nowhere) and
// before anything is written.
func TestConsumeFlagLimits(t *testing.T) {
	nowhere := []string{"consume", "--url", "amqp://127.0.0.1:1/"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--messages", "100000000"}, "--messages 100000000: want 1 to 100000"},
		{[]string{"--messages", "0"}, "--messages 0: want 1 to 100000"},
		{[]string{"--consumers", "100000"}, "--consumers 100000: want 1 to 256"},
		{[]string{"--consumers", "0"}, "--consumers 0: want 1 to 256"},
		{[]string{"--processes", "--consumers", "65"}, "--consumers 65: want 1 to 64 with --processes"},
		{[]string{"--restarts", "100000"}, "--restarts 100000: want 0 to --consumers (4) without --processes"},
		{[]string{"--processes", "--restarts", "101"}, "--restarts 101: want 0 to 100"},
		{[]string{"--latency=-1ms"}, "--latency -1ms: want above 0 and at most 1m"},
		{[]string{"--latency", "0"}, "--latency 0s: want above 0 and at most 1m"},
		{[]string{"--latency", "1h"}, "--latency 1h0m0s: want above 0 and at most 1m"},
		{[]string{"--timeout=-1s"}, "--timeout -1s: want above 0 and at most 24h"},
		{[]string{"--timeout", "48h"}, "--timeout 48h0m0s: want above 0 and at most 24h"},
		{[]string{"--duplicate-rate", "NaN"}, "--duplicate-rate NaN: want 0 to 1"},
		{[]string{"--duplicate-rate", "1.5"}, "--duplicate-rate 1.5: want 0 to 1"},
		{[]string{"--duplicate-rate=-0.1"}, "--duplicate-rate -0.1: want 0 to 1"},
		{[]string{"--batch", "501"}, "--batch 501: want 0 to 500"},
		{[]string{"--batch-linger", "2s"}, "--batch-linger 2s: want 0 to 1s"},
		{[]string{"--crash-before-ack", "1001"}, "--crash-before-ack 1001: want 0 to 1000"},
		{[]string{"--pause", "101"}, "--pause 101: want 0 to 100"},
		{[]string{"--overlap", "1001"}, "--overlap 1001: want 0 to 1000"},
		{[]string{"--seed=-1"}, "--seed -1: want 0 to 9007199254740991"},
		{[]string{"--seed", "9007199254740992"}, "--seed 9007199254740992: want 0 to 9007199254740991"},
		{[]string{"--no-save"}, "--out and --no-save do not go together"},
		{[]string{"--messages", "2", "--crash-before-ack", "3"}, "need as many distinct messages"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			work := t.TempDir()
			args := append(append(slices.Clone(nowhere), "--out", filepath.Join(work, "out")), c.args...)
			start := time.Now()
			r := runCLI(t, args...)
			if r.code != exitUsage || !strings.Contains(r.err, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", r.code, exitUsage, c.want, r.err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("refused after %s", took)
			}
			if got := dirNames(t, work); len(got) != 0 {
				t.Errorf("a refused command wrote %v", got)
			}
		})
	}
	help := runCLI(t, "consume", "--help")
	for _, bound := range []string{
		fmt.Sprintf("publish: 1 to %d.", consume.MaxMessages),
		fmt.Sprintf("1 to %d (1 to %d with --processes)", consume.MaxConsumers, consume.MaxProcesses),
		fmt.Sprintf("0 to %d; 0 or 1", consume.MaxBatch),
		fmt.Sprintf("(aimed): 0 to %d.", consume.MaxCrashes),
		fmt.Sprintf("ack wait: 0 to %d.", consume.MaxPauses),
		fmt.Sprintf("in flight: 0 to %d.", consume.MaxOverlaps),
		fmt.Sprintf("during the run: 0 to %d,", consume.MaxRestarts),
		"--messages=200", "--latency=2ms", "--timeout=60s", "at most 1m", "at most 24h", "0 to 1s",
	} {
		if !strings.Contains(strings.Join(strings.Fields(help.stdout), " "), bound) {
			t.Errorf("consume --help lacks %q", bound)
		}
	}
}

// TestConsumeOutDirectory: consume --out follows run's rule: a foreign
// non-empty directory is refused and left alone, an --out that cannot be
// written is refused before anything connects, and a previous run is
// replaced whole, with nothing left beside it.
func TestConsumeOutDirectory(t *testing.T) {
	work := t.TempDir()
	foreign := foreignDir(t, work)
	refused := []struct {
		out, want string
	}{
		{foreign, "not an idembench run directory"},
		{"/etc/passwd", "not a directory"},
		{"/proc/idembench-consume-test", "--out /proc/idembench-consume-test"},
	}
	for _, c := range refused {
		r := runCLI(t, "consume", "--url", "amqp://127.0.0.1:1/", "--messages", "20", "--out", c.out)
		if r.code != exitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("--out %s: exit %d (want %d), stderr lacks %q:\n%s", c.out, r.code, exitUsage, c.want, r.err)
		}
	}
	if !foreignUntouched(t, foreign) {
		t.Fatalf("refused run wrote into the directory: %v", dirNames(t, foreign))
	}

	url := testenv.AMQPURL(t)
	out := filepath.Join(work, "run")
	if r := runCLI(t, "consume", "--url", url, "--messages", "20", "--seed", "5", "--out", out); r.code != exitOK {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	stale := filepath.Join(out, "violations", "stale.html")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "consume", "--url", url, "--messages", "20", "--seed", "6", "--out", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "run directory: "+out+"\n") {
		t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the previous run's files are still there: %v", err)
	}
	for _, f := range []string{reports.HistoryFile, reports.SummaryFile, consume.StatsFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
	if got := dirNames(t, work); !slices.Equal(got, []string{"foreign", "run"}) {
		t.Errorf("temporary directories left beside the run: %v", got)
	}
}

// TestConsumeJSON: consume --json prints summary.json's document on
// stdout (with --no-save too) and its text on stderr.
func TestConsumeJSON(t *testing.T) {
	url := testenv.AMQPURL(t)
	for _, save := range []string{"--no-save", "--out"} {
		t.Run(save, func(t *testing.T) {
			args := []string{"consume", "--json", "--url", url, "--messages", "20", "--seed", "4", save}
			if save == "--out" {
				args = append(args, filepath.Join(t.TempDir(), "run"))
			}
			r := runCLI(t, args...)
			if r.code != exitOK || !strings.Contains(r.err, "verdict: ok") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.err)
			}
			s, err := reports.DecodeSummary(strings.NewReader(r.stdout))
			if err != nil {
				t.Fatalf("stdout is not a summary: %v\n%s", err, r.stdout)
			}
			if s.Verdict != "ok" || s.Tool != "idembench consume" || s.Options["messages"] != "20" ||
				!strings.HasPrefix(s.ReplayCommand, invokedAs()+" consume --broker rabbitmq --seed 4 --messages 20") {
				t.Errorf("summary: verdict %q, tool %q, options %v, replay %q", s.Verdict, s.Tool, s.Options, s.ReplayCommand)
			}
		})
	}
}
