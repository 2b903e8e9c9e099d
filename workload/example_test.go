package workload_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// A fenced sink applies an effect only if no higher token was applied for
// its key: a holder that lost its lease cannot apply a late effect.
func ExampleNewSink() {
	ctx := context.Background()
	sink, _ := workload.NewSink(workload.SinkFenced)
	successor, _ := sink.Apply(ctx, workload.Effect{Key: "order-1", Token: 8, Exec: "b"})
	stale, _ := sink.Apply(ctx, workload.Effect{Key: "order-1", Token: 7, Exec: "a"})
	fmt.Println("token 8 applied:", successor)
	fmt.Println("token 7 applied:", stale)
	fmt.Printf("%+v\n", sink.Ledger().Stats())
	// Output:
	// token 8 applied: true
	// token 7 applied: false
	// {Keys:1 Applied:1 Rejected:1 Doubled:0}
}

// Run drives concurrent clients against a store and records every call
// and effect; the ledger says whether any key's effect ran twice.
func ExampleRun() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	sink, _ := workload.NewSink(workload.SinkFenced)
	res, err := workload.Run(context.Background(), workload.Config{
		Seed:     1,
		Duration: 100 * time.Millisecond,
		Clients:  4,
		Store:    store,
		Sink:     sink,
		Keys:     workload.Keys{Concurrent: 2}, // every request delivered three times at once
		Retry:    workload.Retry{MaxAttempts: 10},
		Engine:   workload.EngineSettings{LeaseTTL: 200 * time.Millisecond, Recovery: true},
		Business: workload.Business{Latency: workload.Latency{Dist: "fixed", Mean: time.Millisecond}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	executed := 0
	for _, op := range res.Recorder.Ops() {
		if op.Outcome == history.Executed {
			executed++
		}
	}
	fmt.Println("executed > 0:", executed > 0)
	fmt.Println("keys with a double effect:", res.Ledger.Stats().Doubled)
	// Output:
	// executed > 0: true
	// keys with a double effect: 0
}
