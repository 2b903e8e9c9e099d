package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func ExampleEngine_Do() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	engine := idem.New(store)

	charge := func(ctx context.Context) (idem.Response, error) {
		lease, _ := idem.LeaseFrom(ctx) // the fencing token, for a fenced side effect
		fmt.Println("charging card, token", lease.Token)
		return idem.Response{Status: 201, Body: []byte(`{"payment":"p_1"}`)}, nil
	}
	fp := idem.FingerprintString("POST", "/payments", `{"amount":100}`)

	first, _ := engine.Do(context.Background(), "order-42", fp, charge)
	again, _ := engine.Do(context.Background(), "order-42", fp, charge) // a client retry
	fmt.Println(first.Response.Status, first.Replayed)
	fmt.Println(again.Response.Status, again.Replayed, string(again.Response.Body))

	other := idem.FingerprintString("POST", "/payments", `{"amount":999}`)
	_, err := engine.Do(context.Background(), "order-42", other, charge)
	fmt.Println(errors.Is(err, idem.ErrFingerprintMismatch))
	// Output:
	// charging card, token 1
	// 201 false
	// 201 true {"payment":"p_1"}
	// true
}

func ExamplePermanent() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	engine := idem.New(store)
	declined := func(ctx context.Context) (idem.Response, error) {
		return idem.Response{Status: 402, Body: []byte("declined")}, idem.Permanent(errors.New("card declined"))
	}
	fp := idem.FingerprintString("pay")
	res, err := engine.Do(context.Background(), "k", fp, declined)
	fmt.Println(res.Failed, err)
	res, err = engine.Do(context.Background(), "k", fp, declined)
	fmt.Println(res.Failed, res.Replayed, res.Response.Status, err)
	// Output:
	// true card declined
	// true true 402 <nil>
}
