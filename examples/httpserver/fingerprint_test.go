package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

// TestFingerprintExcludeFlag: with --fingerprint-exclude a retry that
// differs only under an excluded member replays, any other change gets
// 422, and the record carries the policy id; a malformed pointer or
// policy id is refused at start.
func TestFingerprintExcludeFlag(t *testing.T) {
	svc := startService(t, serviceOptions{policy: "ietf", fpExclude: "/meta,/client_ref", fpPolicy: "payments/subset-v1"})
	api := svc.url
	first := `{"amount":100,"currency":"EUR","meta":{"trace":"a"},"client_ref":"r1"}`
	if st, replayed, _ := call(t, "POST", api+"/payments", "k1", first); st != http.StatusCreated || replayed {
		t.Fatalf("first: %d replayed %v", st, replayed)
	}
	if st, replayed, _ := call(t, "POST", api+"/payments", "k1", `{"client_ref":"r2","currency":"EUR","amount":100,"meta":{"trace":"b"}}`); st != http.StatusCreated || !replayed {
		t.Fatalf("excluded members changed: %d replayed %v; want the 201 replayed", st, replayed)
	}
	if st, _, _ := call(t, "POST", api+"/payments", "k1", `{"amount":200,"currency":"EUR","meta":{"trace":"a"},"client_ref":"r1"}`); st != http.StatusUnprocessableEntity {
		t.Fatalf("amount changed: %d, want 422", st)
	}
	k, err := idem.StorageKey("k1", "/payments") // the service scopes keys by path
	if err != nil {
		t.Fatal(err)
	}
	rec, err := svc.store.Get(context.Background(), k)
	if err != nil || rec.FingerprintPolicy != "payments/subset-v1" {
		t.Fatalf("stored record %+v, %v; want policy payments/subset-v1", rec, err)
	}
	for _, args := range [][]string{{"--fingerprint-exclude", "meta"}, {"--fingerprint-policy", "pay ments"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%q: %v, want an error naming %s", args, err, args[0])
		}
	}
}
