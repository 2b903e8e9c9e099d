package harness_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
)

// One run of a built-in scenario against a store, end to end.
func ExampleRun() {
	mine := harness.StoreFactory{Name: "mystore", Open: func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
		st := memstore.New(memstore.Options{Clock: env.Clock})
		return st, st, nil
	}}
	o, err := harness.Run(context.Background(), harness.Spec{
		Engine:       mine,
		ScenarioName: "duplicates",
		Overrides:    harness.Overrides{Seed: 7, Duration: 300 * time.Millisecond},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verdict:", o.Verdict(), "· seed:", o.Seed, "· effects applied:", o.Ledger.Applied > 0)
	// Output: verdict: ok · seed: 7 · effects applied: true
}
