package consume_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/internal/testenv"
)

func brokerURL(t *testing.T, broker string) string {
	t.Helper()
	if broker == consume.RabbitMQ {
		return testenv.AMQPURL(t)
	}
	return testenv.NATSURL(t)
}

var brokers = []string{consume.RabbitMQ, consume.NATS}

// needNATSServer skips t when the nats-server binary is missing (fails it
// under IDEM_REQUIRE_BACKENDS=1): the test starts a private server.
func needNATSServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("nats-server"); err == nil {
		return
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return
	}
	if testenv.Required() {
		t.Fatal("nats-server is not installed and backends are required")
	}
	t.Skip("skipping: nats-server is not installed")
}
