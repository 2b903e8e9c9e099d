package cli

import (
	"context"
	"time"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/multiproc"
)

// workerCmd is the hidden `idembench worker`: one worker process of a
// multi-process run, of `run --workers` or of `consume --processes`. It
// speaks the worker protocol of harness/multiproc with the coordinator,
// whose hello names the kind of worker and carries its spec: over stdin
// and stdout when the coordinator started it, or, with --join, through
// the NATS JetStream server of a run whose workers start elsewhere
// (`run --workers N --join URL` prints this command for each worker).
type workerCmd struct {
	Join    string        `help:"Join a run through the NATS JetStream server at URL instead of speaking on stdin and stdout." placeholder:"URL"`
	RunName string        `name:"run" help:"With --join: the run's name, as the coordinator printed it." placeholder:"NAME"`
	Index   int           `help:"With --join: this worker's index, 0 to the run's workers - 1."`
	Wait    time.Duration `help:"With --join: how long to try to reach the coordinator." default:"1m"`
}

func (c workerCmd) Run(ctx context.Context, reg *harness.Registry) error {
	kinds := map[string]multiproc.WorkerFunc{
		multiproc.RunKind:  multiproc.RunWorker(reg),
		consume.WorkerKind: consume.Worker,
	}
	if c.Join == "" {
		return multiproc.ServeWorker(ctx, multiproc.Stdio(), kinds)
	}
	if c.RunName == "" || c.Index < 0 || c.Index >= multiproc.MaxWorkers {
		return usage("worker --join needs --run NAME and --index 0 to %d", multiproc.MaxWorkers-1)
	}
	return multiproc.JoinWorker(ctx, multiproc.Join{URL: c.Join, Run: c.RunName, Wait: c.Wait}, c.Index, kinds)
}
