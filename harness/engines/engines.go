// Package engines registers the engines that ship with idembench through
// the same public API a user's store uses (harness.StoreFactory): the reference
// engine "idem" on memory, Redis and PostgreSQL, the known-bad designs
// of backends/naive as "naive/<design>", in-memory only, and the known-bad
// completer as "naive/unfenced-completer" on the reference stores.
//
// A binary with its own engine next to these:
//
//	engines := append(engines.Builtin(), harness.StoreFactory{Name: "mystore", Open: openMyStore})
//	os.Exit(cli.Main(os.Args[1:], engines...))
package engines

import (
	"context"
	"io"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
)

// Builtin returns the reference engine followed by the known-bad designs
// and the known-bad completer.
func Builtin() []harness.StoreFactory {
	return append(append([]harness.StoreFactory{Reference()}, Naive()...), UnfencedCompleter())
}

// UnfencedCompleter returns the engine "naive/unfenced-completer": the
// reference engine's stores on every backend, with the known-bad completer
// naive.UnfencedCompleter in place of the reference one. It differs from
// the reference engine only in scenarios that run completers
// (abandoned-keys), where it must be caught.
func UnfencedCompleter() harness.StoreFactory {
	e := Reference()
	e.Name = NaivePrefix + "unfenced-completer"
	e.OpenTxSink = nil
	e.Completer = naive.UnfencedCompleter
	return e
}

// NaivePrefix starts the name of every known-bad design.
const NaivePrefix = "naive/"

// Naive returns the known-bad designs of backends/naive, each named
// NaivePrefix + design, on the memory backend only.
func Naive() []harness.StoreFactory {
	var out []harness.StoreFactory
	for _, name := range naive.Names() {
		out = append(out, harness.StoreFactory{
			Name:     NaivePrefix + name,
			Backends: []harness.Backend{harness.Memory},
			Open: func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
				st, err := naive.New(name, env.Clock)
				return st, nil, err
			},
		})
	}
	return out
}
