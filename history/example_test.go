package history_test

import (
	"bytes"
	"fmt"

	"github.com/idembench/idembench/history"
)

// A driver records what each client saw, then saves the run as JSON lines.
func Example() {
	rec := history.NewRecorder()
	rec.Record(history.Op{Kind: history.KindCall, Client: 1, Key: "order-1", Call: 100, Return: 250,
		Outcome: history.Executed, Token: 7, Resp: "9f2c", Exec: "w1-1"})
	rec.Record(history.Op{Kind: history.KindEffect, Client: 1, Key: "order-1", Call: 120, Return: 180,
		Token: 7, Exec: "w1-1", Applied: true})
	rec.Record(history.Op{Kind: history.KindCall, Client: 2, Key: "order-1", Call: 300, Return: history.NoReturn,
		Outcome: history.Unknown, Err: "timeout"})

	h := rec.History(history.Header{Scenario: "demo", Seed: 1, Clock: "test"})
	var buf bytes.Buffer
	if err := history.Encode(&buf, h); err != nil {
		fmt.Println(err)
		return
	}
	back, err := history.Decode(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	calls, effects, faults := back.Counts()
	fmt.Println(back.Header.Scenario, calls, effects, faults)
	for _, op := range back.Ops {
		fmt.Println(string(history.AppendOp(nil, &op)))
	}
	// Output:
	// demo 2 1 0
	// {"kind":"call","client":1,"worker":0,"key":"order-1","call":100,"ret":250,"outcome":"executed","token":7,"resp":"9f2c","exec":"w1-1"}
	// {"kind":"effect","client":1,"worker":0,"key":"order-1","call":120,"ret":180,"token":7,"exec":"w1-1","applied":true}
	// {"kind":"call","client":2,"worker":0,"key":"order-1","call":300,"ret":9223372036854775807,"outcome":"unknown","err":"timeout"}
}
