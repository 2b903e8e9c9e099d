package consume_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness/multiproc"
)

// workerEnv makes the test binary a consume worker process instead of
// running tests.
const workerEnv = "IDEM_CONSUME_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := multiproc.ServeWorker(ctx, multiproc.Stdio(), map[string]multiproc.WorkerFunc{consume.WorkerKind: consume.Worker})
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// workerCommand re-executes the test binary as a worker process.
func workerCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}
