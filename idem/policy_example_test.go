package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func ExampleEngine_DoClaim() {
	store := memstore.New(memstore.Options{SweepInterval: -1})
	defer store.Close()
	engine := idem.New(store)
	defer engine.Close()
	ctx := context.Background()
	charge := func(context.Context) (idem.Response, error) {
		fmt.Println("charging card")
		return idem.Response{Status: 201, Body: []byte(`{"id":7}`)}, nil
	}
	// v1 fingerprinted the whole body; v2 leaves the client's trace out.
	v1 := idem.FingerprintString("v1", `{"amount":100,"trace":"a"}`)
	v2 := idem.FingerprintString("v2", `{"amount":100}`)
	_, _ = engine.DoClaim(ctx, "", "order-7", idem.Claim{Fingerprint: v1, Policy: "pay/v1"}, charge)

	// After the change, a retry is compared under pay/v1, the key's policy.
	knowsV1 := func(id string, stored idem.Fingerprint) (known, same bool) {
		return id == "pay/v1", id == "pay/v1" && stored == v1
	}
	res, err := engine.DoClaim(ctx, "", "order-7", idem.Claim{Fingerprint: v2, Policy: "pay/v2", Prior: knowsV1}, charge)
	fmt.Println(res.Replayed, string(res.Response.Body), err)

	// A server that forgot pay/v1 cannot compare: neither replay nor 422.
	_, err = engine.DoClaim(ctx, "", "order-7", idem.Claim{Fingerprint: v2, Policy: "pay/v2"}, charge)
	fmt.Println(errors.Is(err, idem.ErrPolicyChanged))
	// Output:
	// charging card
	// true {"id":7} <nil>
	// true
}
