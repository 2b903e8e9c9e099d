package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/cli"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/idem"
)

// A store author's binary: the CLI with one more engine. Every subcommand
// then takes --engine mystore.
func Example_customEngine() {
	mine := harness.StoreFactory{
		Name:     "mystore",
		Backends: []harness.Backend{harness.Memory},
		Open: func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
			st := memstore.New(memstore.Options{Clock: env.Clock})
			return st, st, nil
		},
	}
	all := append(engines.Builtin(), mine)
	cli.Run(context.Background(), []string{"engines"}, os.Stdout, os.Stderr, all...)
	code := cli.Run(context.Background(), []string{"run", "--engine", "mystore", "--scenario", "duplicates",
		"--duration", "300ms", "--seed", "1", "--no-save", "--no-progress"}, io.Discard, os.Stderr, all...)
	fmt.Println("exit", code)
	// Output:
	// idem                         memory, redis, postgres · sink tx
	// naive/check-then-act         memory
	// naive/cache-on-success       memory
	// naive/unfenced-takeover      memory
	// naive/delete-on-error        memory
	// naive/no-expiry              memory
	// naive/no-heartbeat           memory
	// naive/token-restart          memory
	// naive/racy-takeover          memory
	// naive/unfenced-heartbeat     memory
	// naive/fail-open              memory
	// naive/keeps-pending          memory
	// naive/unscoped-key           memory
	// naive/unfenced-completer     memory, redis, postgres
	// mystore                      memory
	// exit 0
}
