package cli

import (
	"context"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/multiproc"
)

// The hidden worker subcommands: one worker process of a multi-process run
// each, speaking the worker protocol of harness/multiproc over stdin and
// stdout with the coordinator that started it, which sends the spec in its
// hello.

// workerCmd is `idembench worker`: one worker process of `run --workers`.
type workerCmd struct{}

func (workerCmd) Run(ctx context.Context, reg *harness.Registry) error {
	return multiproc.Worker(ctx, multiproc.Stdio(), reg)
}

// consumeWorkerCmd is `idembench consume-worker`: one consumer process of
// `consume --processes`.
type consumeWorkerCmd struct{}

func (consumeWorkerCmd) Run(ctx context.Context) error {
	return consume.ServeWorker(ctx, multiproc.Stdio())
}
