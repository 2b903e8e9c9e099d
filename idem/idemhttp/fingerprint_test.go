package idemhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idembench/idembench/idem/idemhttp"
)

type req struct {
	method, target, contentType, body string
	header                            http.Header
}

func (q req) build() *http.Request {
	r := httptest.NewRequest(q.method, q.target, nil)
	if q.contentType != "" {
		r.Header.Set("Content-Type", q.contentType)
	}
	for k, vs := range q.header {
		r.Header[k] = vs
	}
	return r
}

func TestFingerprinter(t *testing.T) {
	const js = "application/json"
	tests := []struct {
		name string
		opts idemhttp.FingerprintOptions
		a, b req
		same bool
	}{
		{"identical", idemhttp.FingerprintOptions{}, req{"POST", "/p", js, `{"a":1}`, nil}, req{"POST", "/p", js, `{"a":1}`, nil}, true},
		{"reordered JSON", idemhttp.FingerprintOptions{}, req{"POST", "/p", js, `{"a":1,"b":2}`, nil}, req{"POST", "/p", js, `{ "b":2, "a":1 }`, nil}, true},
		{"+json media type", idemhttp.FingerprintOptions{}, req{"POST", "/p", "application/merge-patch+json", `{"a":1,"b":2}`, nil}, req{"POST", "/p", "application/merge-patch+json", `{"b":2,"a":1}`, nil}, true},
		{"media type case and parameters", idemhttp.FingerprintOptions{}, req{"POST", "/p", "Application/JSON", `{"a":1}`, nil}, req{"POST", "/p", "application/json; charset=utf-8", `{"a":1}`, nil}, true},
		{"RawJSON", idemhttp.FingerprintOptions{RawJSON: true}, req{"POST", "/p", js, `{"a":1,"b":2}`, nil}, req{"POST", "/p", js, `{"b":2,"a":1}`, nil}, false},
		{"number literal", idemhttp.FingerprintOptions{}, req{"POST", "/p", js, `{"a":1}`, nil}, req{"POST", "/p", js, `{"a":1.0}`, nil}, false},
		{"different media type", idemhttp.FingerprintOptions{}, req{"POST", "/p", js, `{"a":1}`, nil}, req{"POST", "/p", "text/plain", `{"a":1}`, nil}, false},
		{"invalid JSON is raw", idemhttp.FingerprintOptions{}, req{"POST", "/p", js, `{"a":1,}`, nil}, req{"POST", "/p", js, `{"a":1,}`, nil}, true},
		{"invalid JSON is not canonical", idemhttp.FingerprintOptions{}, req{"POST", "/p", js, `{"a":1,}`, nil}, req{"POST", "/p", js, `{"a":1}`, nil}, false},
		{"method", idemhttp.FingerprintOptions{}, req{"POST", "/p", "", "", nil}, req{"PATCH", "/p", "", "", nil}, false},
		{"path", idemhttp.FingerprintOptions{}, req{"POST", "/p", "", "", nil}, req{"POST", "/p/", "", "", nil}, false},
		{"escaped path", idemhttp.FingerprintOptions{}, req{"POST", "/a%2Fb", "", "", nil}, req{"POST", "/a/b", "", "", nil}, false},
		{"query order", idemhttp.FingerprintOptions{}, req{"POST", "/p?a=1&b=2", "", "", nil}, req{"POST", "/p?b=2&a=1", "", "", nil}, true},
		{"query value order", idemhttp.FingerprintOptions{}, req{"POST", "/p?a=1&a=2", "", "", nil}, req{"POST", "/p?a=2&a=1", "", "", nil}, false},
		{"query value", idemhttp.FingerprintOptions{}, req{"POST", "/p?a=1", "", "", nil}, req{"POST", "/p?a=2", "", "", nil}, false},
		{"IgnoreQuery", idemhttp.FingerprintOptions{IgnoreQuery: true}, req{"POST", "/p?a=1", "", "", nil}, req{"POST", "/p?a=2", "", "", nil}, true},
		{"unselected header", idemhttp.FingerprintOptions{}, req{"POST", "/p", "", "", http.Header{"X-Account": {"1"}}}, req{"POST", "/p", "", "", http.Header{"X-Account": {"2"}}}, true},
		{"selected header", idemhttp.FingerprintOptions{Headers: []string{"x-account"}}, req{"POST", "/p", "", "", http.Header{"X-Account": {"1"}}}, req{"POST", "/p", "", "", http.Header{"X-Account": {"2"}}}, false},
		{"selected header absent vs empty", idemhttp.FingerprintOptions{Headers: []string{"X-Account"}}, req{"POST", "/p", "", "", nil}, req{"POST", "/p", "", "", http.Header{"X-Account": {""}}}, false},
		{"selected header same", idemhttp.FingerprintOptions{Headers: []string{"X-Account"}}, req{"POST", "/p", "", "", http.Header{"X-Account": {"1"}}}, req{"POST", "/p", "", "", http.Header{"X-Account": {"1"}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := idemhttp.NewFingerprinter(tt.opts)
			fa, err := f(tt.a.build(), []byte(tt.a.body))
			if err != nil {
				t.Fatal(err)
			}
			fb, err := f(tt.b.build(), []byte(tt.b.body))
			if err != nil {
				t.Fatal(err)
			}
			if (fa == fb) != tt.same {
				t.Fatalf("same fingerprint = %v, want %v", fa == fb, tt.same)
			}
		})
	}
}
