package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/internal/testenv"
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
			if ok.code != exitOK || !strings.Contains(ok.stdout, "verdict: ok") || !strings.Contains(ok.stdout, "replay: idembench consume") {
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
