package idemhttp_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// TestReplayPolicies: per policy, which statuses a retry with the same key
// gets replayed (the handler ran once) and which run the handler again.
func TestReplayPolicies(t *testing.T) {
	stored := map[idemhttp.ReplayPolicy]map[int]bool{
		idemhttp.PolicyIETF:         {201: true, 422: true, 500: false, 503: false},
		idemhttp.PolicyStripe:       {201: true, 422: true, 500: true, 503: true},
		idemhttp.PolicyCache2xxOnly: {201: true, 422: false, 500: false, 503: false},
		"":                          {201: true, 422: true, 500: false, 503: false},
	}
	for policy, statuses := range stored {
		for status, want := range statuses {
			t.Run(string(policy)+"/"+http.StatusText(status), func(t *testing.T) {
				runs := 0
				h := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{ReplayPolicy: policy})(
					http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						runs++
						w.WriteHeader(status)
						_, _ = w.Write([]byte(http.StatusText(status)))
					}))
				first := serve(h, request("POST", "/p", "k", `{}`))
				second := serve(h, request("POST", "/p", "k", `{}`))
				replayed := second.Header().Get(idemhttp.ReplayedHeader) == "true"
				if first.Code != status || second.Code != status || replayed != want || (runs == 1) != want {
					t.Fatalf("first %d, second %d (replayed %v), %d runs; want status %d both times, stored=%v",
						first.Code, second.Code, replayed, runs, status, want)
				}
			})
		}
	}
	if _, err := idemhttp.ParseReplayPolicy("always"); err == nil {
		t.Fatal(`ParseReplayPolicy("always") succeeded`)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Middleware accepted an unknown policy")
		}
	}()
	idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{ReplayPolicy: "always"})
}

// TestExpiresHeader: the first response and the replay tell the client
// until when its key is kept, within a few seconds of each other and of
// now plus the retention.
func TestExpiresHeader(t *testing.T) {
	const retention = time.Hour
	h := idemhttp.Middleware(idem.New(newStore(t), idem.WithRetention(retention)),
		idemhttp.Options{ExpiresHeader: "Idempotency-Key-Expires"})(&counter{})
	want := time.Now().Add(retention)
	for i, name := range []string{"first", "replay"} {
		w := serve(h, request("POST", "/p", "k", `{}`))
		got, err := http.ParseTime(w.Header().Get("Idempotency-Key-Expires"))
		if err != nil || w.Code != http.StatusCreated || (w.Header().Get(idemhttp.ReplayedHeader) == "true") != (i == 1) {
			t.Fatalf("%s: %d %v: %v", name, w.Code, w.Header(), err)
		}
		if d := got.Sub(want); d < -5*time.Second || d > 5*time.Second {
			t.Fatalf("%s: expires %s, want about %s", name, got, want)
		}
	}
	plain := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{})(&counter{})
	if w := serve(plain, request("POST", "/p", "k", `{}`)); w.Header().Get("Idempotency-Key-Expires") != "" {
		t.Fatal("expiry header sent without Options.ExpiresHeader")
	}
}
