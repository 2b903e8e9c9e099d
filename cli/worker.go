package cli

import (
	"context"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/multiproc"
)

// workerCmd is the hidden `idembench worker`: one worker process of a
// multi-process run, of `run --workers` or of `consume --processes`. It
// speaks the worker protocol of harness/multiproc over stdin and stdout
// with the coordinator that started it, whose hello names the kind of
// worker and carries its spec.
type workerCmd struct{}

func (workerCmd) Run(ctx context.Context, reg *harness.Registry) error {
	return multiproc.ServeWorker(ctx, multiproc.Stdio(), map[string]multiproc.WorkerFunc{
		multiproc.RunKind:  multiproc.RunWorker(reg),
		consume.WorkerKind: consume.Worker,
	})
}
