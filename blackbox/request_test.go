package blackbox

import (
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/idembench/idembench/history"
)

func TestClassify(t *testing.T) {
	tg := mustParseTarget(t, "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p, success: [201], replay_header: 'Idempotency-Replayed: true', mismatch_status: [417], failed_status: [402]}\n", "t.yaml")
	op := &tg.Operation
	replayed := http.Header{"Idempotency-Replayed": {"true"}}
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	cases := []struct {
		name  string
		a     answer
		out   history.Outcome
		final bool
		// undeclared: the target says nothing about the status.
		undeclared bool
	}{
		{"success", answer{status: 201}, history.Executed, true, false},
		{"success replayed", answer{status: 201, header: replayed}, history.Replayed, true, false},
		{"other marker value", answer{status: 201, header: http.Header{"Idempotency-Replayed": {"false"}}}, history.Executed, true, false},
		{"2xx not declared", answer{status: 200}, history.Unknown, true, true},
		{"conflict", answer{status: 409}, history.InProgress, false, false},
		{"declared mismatch", answer{status: 417}, history.Mismatch, true, false},
		// 422 is the default mismatch status; a target that declares
		// another has not declared 422.
		{"422 not declared", answer{status: 422}, history.Unknown, true, true},
		{"too many requests", answer{status: 429}, history.Released, false, false},
		{"5xx", answer{status: 503}, history.Released, false, false},
		{"stored 5xx", answer{status: 502, header: replayed}, history.Failed, true, false},
		{"bad request", answer{status: 400}, history.Error, true, false},
		{"declared stored 4xx", answer{status: 402}, history.Failed, true, false},
		{"4xx not declared", answer{status: 404}, history.Unknown, true, true},
		{"timeout after sending", answer{err: errors.New("deadline"), sent: true}, history.Unknown, false, false},
		{"refused", answer{err: dial, sent: isDialErrorSent(dial)}, history.Error, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, final, declared := op.classify(&tc.a)
			if out != tc.out || final != tc.final || declared == tc.undeclared {
				t.Errorf("classify = %s, final %v, declared %v; want %s, %v, %v", out, final, declared, tc.out, tc.final, !tc.undeclared)
			}
		})
	}
}

func isDialErrorSent(err error) bool { return !isDialError(err) }

func TestResourceID(t *testing.T) {
	cases := []struct {
		ptr, body, location, want string
	}{
		{"/id", `{"id":"pay_1"}`, "", "pay_1"},
		{"/data/0/id", `{"data":[{"id":7}]}`, "", "7"},
		{"/a~1b", `{"a/b":"x"}`, "", "x"},
		{"/id", `not json`, "", ""},
		{"/missing", `{"id":"pay_1"}`, "", ""},
		{"header:Location", ``, "/payments/pay_9", "/payments/pay_9"},
	}
	for _, tc := range cases {
		op := Operation{ResourceID: tc.ptr}
		a := answer{body: []byte(tc.body), header: http.Header{"Location": {tc.location}}}
		if got := op.resourceID(&a); got != tc.want {
			t.Errorf("resourceID(%s, %s) = %q, want %q", tc.ptr, tc.body, got, tc.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	cases := []struct {
		body string
		want map[string]int
		ok   bool
	}{
		{`{"a":1,"b":2}`, map[string]int{"a": 1, "b": 2}, true},
		{`{"counts":{"a":3}}`, map[string]int{"a": 3}, true},
		{`{}`, map[string]int{}, true},
		{`[1,2]`, nil, false},
		{`{"a":-1}`, nil, false},
		{`{"a":1.5}`, nil, false},
		{`{"a":"1"}`, nil, false},
		{`<html>`, nil, false},
	}
	for _, tc := range cases {
		got, err := parseCounts([]byte(tc.body), "test")
		if tc.ok != (err == nil) {
			t.Errorf("parseCounts(%s): err %v, want ok=%v", tc.body, err, tc.ok)
			continue
		}
		if !tc.ok && !errors.Is(err, ErrOracle) {
			t.Errorf("parseCounts(%s): err %v does not wrap ErrOracle", tc.body, err)
		}
		if tc.ok && len(got) != len(tc.want) {
			t.Errorf("parseCounts(%s) = %v, want %v", tc.body, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("parseCounts(%s)[%s] = %d, want %d", tc.body, k, got[k], v)
			}
		}
	}
}
