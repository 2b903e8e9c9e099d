package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func ExampleEngine_Resolve() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	engine := idem.New(store)
	fp := idem.FingerprintString("POST", "/payments", `{"amount":100}`)
	charge := func(context.Context) (idem.Response, error) {
		fmt.Println("charging card")
		// The provider timed out: the card may or may not have been charged.
		return idem.Response{}, idem.MarkAmbiguous(errors.New("provider timed out"))
	}

	res, err := engine.Do(context.Background(), "order-42", fp, charge)
	fmt.Println(errors.Is(err, idem.ErrUncertain), res.Uncertain)
	_, err = engine.Do(context.Background(), "order-42", fp, charge) // a retry: nothing runs
	fmt.Println(errors.Is(err, idem.ErrUncertain))

	// The operator asked the provider: the charge went through.
	paid := idem.Response{Status: 201, Body: []byte(`{"payment":"p_1"}`)}
	if err := engine.Resolve(context.Background(), "order-42", res.Token, &paid); err != nil {
		fmt.Println(err)
	}
	again, err := engine.Do(context.Background(), "order-42", fp, charge)
	fmt.Println(again.Response.Status, again.Replayed, err)
	// Output:
	// charging card
	// true true
	// true
	// 201 true <nil>
}
