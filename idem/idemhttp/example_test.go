package idemhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

func ExampleMiddleware() {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	eng := idem.New(store)

	payments := 0
	create := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payments++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"pay_%d"}`, payments)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", idemhttp.Middleware(eng, idemhttp.Options{})(create))

	send := func(key, body string) {
		r := httptest.NewRequest("POST", "/payments", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Body)
		fmt.Printf("%d replayed=%q %s\n", w.Code, w.Header().Get("Idempotency-Replayed"), strings.TrimSpace(string(b)))
	}
	send("", `{"amount":100,"currency":"EUR"}`)
	send("order-42", `{"amount":100,"currency":"EUR"}`)
	send("order-42", `{"currency":"EUR", "amount":100}`) // same request, members reordered
	send("order-42", `{"amount":999,"currency":"EUR"}`)
	fmt.Println("payments made:", payments)
	// Output:
	// 400 replayed="" {"type":"about:blank","title":"Bad Request","status":400,"detail":"POST requests need the Idempotency-Key header","reason":"missing_key","retry":"new_key"}
	// 201 replayed="" {"id":"pay_1"}
	// 201 replayed="true" {"id":"pay_1"}
	// 422 replayed="" {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this key was already used by a different request (method, path, query or body differ)","reason":"fingerprint_mismatch","retry":"new_key"}
	// payments made: 1
}

func ExampleNewFingerprinter() {
	fp := idemhttp.NewFingerprinter(idemhttp.FingerprintOptions{Headers: []string{"X-Account"}})
	req := func(account string) *http.Request {
		r := httptest.NewRequest("POST", "/transfers", nil)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Account", account)
		return r
	}
	a, _ := fp(req("acct_1"), []byte(`{"to":"b","amount":5}`))
	b, _ := fp(req("acct_1"), []byte(`{"amount":5,"to":"b"}`))
	c, _ := fp(req("acct_2"), []byte(`{"amount":5,"to":"b"}`))
	fmt.Println("reordered body, same account:", a == b)
	fmt.Println("other account:", a == c)
	// Output:
	// reordered body, same account: true
	// other account: false
}

func ExampleCanonicalJSON() {
	c, err := idemhttp.CanonicalJSON([]byte(`{ "currency": "EUR", "amount": 100, "meta": {"b": 1, "a": [2, 1]} }`))
	fmt.Println(string(c), err)
	_, err = idemhttp.CanonicalJSON([]byte(`{"a":1,"a":2}`))
	fmt.Println(err)
	// Output:
	// {"amount":100,"currency":"EUR","meta":{"a":[2,1],"b":1}} <nil>
	// idemhttp: JSON not canonicalizable: repeated member "a"
}
