package ownstore_test

import (
	"context"
	"io"
	"testing"

	"github.com/idembench/idembench/examples/ownstore"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/harnesstest"
	"github.com/idembench/idembench/idem"
)

// TestUnderTheHarness runs the built-in scenarios against the MySQL store
// through the whole harness: one line of a store author's test.
func TestUnderTheHarness(t *testing.T) {
	dsn := mysqlURL(t)
	harnesstest.Run(t, func(ctx context.Context, _ harness.Env) (idem.Store, io.Closer, error) {
		st, err := ownstore.Open(ctx, dsn)
		return st, st, err
	}, harnesstest.Persistent(), harnesstest.Named("mysql"),
		harnesstest.Scenarios("default", "duplicates", "crash-after-effect", "gc-pause", "retryable-failures"))
}
