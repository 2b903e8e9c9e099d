package checker_test

import (
	"fmt"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// A worker crashed after the side effect; with no recovery, the retry ran
// the effect again. The checker finds the double execution.
func Example() {
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindCall, Client: 1, Key: "pay-1", FP: "f", Call: 100, Return: history.NoReturn,
			Outcome: history.Unknown, Err: "worker crashed"},
		{Kind: history.KindEffect, Client: 1, Key: "pay-1", Call: 110, Return: 120, Token: 1, Applied: true},
		{Kind: history.KindCall, Client: 1, Key: "pay-1", FP: "f", Call: 900, Return: 990,
			Outcome: history.Executed, Token: 2, Resp: "9f2c"},
		{Kind: history.KindEffect, Client: 1, Key: "pay-1", Call: 910, Return: 920, Token: 2, Applied: true},
		{Kind: history.KindCall, Client: 0, Key: "pay-1", FP: "f", Call: 2000, Return: 2010,
			Outcome: history.Replayed, Resp: "9f2c", Probe: true},
	}}
	rep := checker.Check(h, checker.Options{})
	fmt.Println(rep.Verdict)
	for _, v := range rep.Violations {
		fmt.Printf("%s %s: %s\n", v.Invariant, v.Key, v.Message)
	}
	// Output:
	// violation
	// I1 pay-1: 2 effects applied for one key (tokens 1, 2): double execution
	// I4 pay-1: not linearizable: more than one applied effect (I1)
}
