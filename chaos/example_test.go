package chaos_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// An injector crashes executions after their side effect; its hook goes
// into the engine with idem.WithHook.
func ExampleNew() {
	in, err := chaos.New(chaos.Config{
		Seed:   1,
		RunFor: time.Minute,
		Faults: []chaos.Fault{{Kind: history.FaultCrash, Point: idem.PointAfterFn, Probability: 1}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	in.Start()
	hook := in.Hook() // idem.New(store, idem.WithHook(hook))
	err = hook(context.Background(), idem.PointAfterFn, idem.Lease{Key: "k", Token: 3})
	fmt.Println(err)
	fmt.Println(in.Windows()[0].Label)
	// Output:
	// chaos: injected crash
	// crash at after-fn
}
