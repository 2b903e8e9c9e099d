package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// A channel-fed consumer: the broker redelivers a message, retries one that
// failed retryably, and sees a message that can never succeed.
func ExampleEngine_Consume() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	eng := idem.New(store)

	type message struct{ ID, Body string }
	queue := make(chan message, 16)
	for _, m := range []message{
		{"m1", "charge 10"},
		{"m2", "charge oops"},
		{"m1", "charge 10"}, // redelivered duplicate
		{"m3", "charge 30"},
		{"m2", "charge oops"},
		{"m1", "charge 99"}, // a different message reusing m1's id
	} {
		queue <- m
	}

	tries := map[string]int{}
	process := func(_ context.Context, m message) error {
		tries[m.ID]++
		switch {
		case m.Body == "charge oops":
			return idem.Permanent(errors.New("unparsable amount"))
		case m.ID == "m3" && tries[m.ID] == 1:
			return errors.New("payment provider timed out")
		}
		fmt.Println("  charged", m.ID)
		return nil
	}

	for len(queue) > 0 {
		m := <-queue
		d, err := eng.Consume(context.Background(), m.ID, idem.FingerprintString(m.Body),
			func(ctx context.Context) error { return process(ctx, m) })
		fmt.Printf("%s %q: %s", m.ID, m.Body, d)
		if err != nil {
			fmt.Printf(" (%v)", err)
		}
		fmt.Println()
		if d == idem.Redeliver || d == idem.RedeliverLater {
			queue <- m // redeliver
		}
	}
	// Output:
	//   charged m1
	// m1 "charge 10": ack
	// m2 "charge oops": dead-letter (unparsable amount)
	// m1 "charge 10": ack
	// m3 "charge 30": redeliver (payment provider timed out)
	// m2 "charge oops": ack
	// m1 "charge 99": dead-letter (idem: key reused with a different request: key "m1")
	//   charged m3
	// m3 "charge 30": ack
}
