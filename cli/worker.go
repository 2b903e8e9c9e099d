package cli

import (
	"context"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/multiproc"
)

// workerCmd is the hidden `idembench worker` subcommand: one worker process
// of a multi-process run (harness/multiproc).
type workerCmd struct {
	Spec string `help:"JSON worker spec." required:""`
}

func (c *workerCmd) Run(ctx context.Context, reg *harness.Registry) error {
	return multiproc.Worker(ctx, c.Spec, reg)
}
