package blackbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/internal/testenv"
)

// downstreamCall sends one call to the mock downstream and returns its
// status and body.
func downstreamCall(t *testing.T, method, url, key, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if token != "" {
		req.Header.Set(FencingTokenHeader, token)
	}
	resp, b := testenv.Send(t, req)
	return resp.StatusCode, string(b)
}

// TestDownstreamFencingAndLookup: a call below the fence of its path and
// key is refused and applies nothing; a lookup raises the fence, answers
// the applied calls of its path and key with their body's members, and is
// never an effect; calls without a token are never refused.
func TestDownstreamFencingAndLookup(t *testing.T) {
	start := time.Now()
	d, err := NewDownstream("Idempotency-Key", 0, func() int64 { return int64(time.Since(start)) })
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	charges, transfers := d.URL()+"/charges", d.URL()+"/transfers"
	lookup := func(url, key, token string) []map[string]any {
		t.Helper()
		status, body := downstreamCall(t, "GET", url, key, token, "")
		var v struct{ Charges []map[string]any }
		if status != 200 || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("lookup %s %s: %d %s", url, key, status, body)
		}
		return v.Charges
	}

	steps := []struct {
		method, url, key, token string
		status                  int
		applied                 int // d.Applied(key) after the step
	}{
		{"POST", charges, "k1", "5", 200, 1},
		{"POST", charges, "k1", "4", 409, 1}, // below the fence of /charges k1
		{"POST", transfers, "k1", "4", 200, 2},
		{"POST", charges, "k2", "1", 200, 1}, // k2 has its own fence
		{"POST", charges, "k1", "", 200, 3},  // no token: never refused
		{"POST", charges, "k1", "x", 400, 3},
	}
	for i, s := range steps {
		status, body := downstreamCall(t, s.method, s.url, s.key, s.token, `{"amount":100,"currency":"EUR"}`)
		if status != s.status {
			t.Fatalf("step %d: %d %s, want %d", i, status, body, s.status)
		}
		if n := d.Applied(s.key); n != s.applied {
			t.Fatalf("step %d: %d applied for %s, want %d", i, n, s.key, s.applied)
		}
	}
	if status, body := downstreamCall(t, "POST", charges, "k1", "4", ""); status != 409 || !strings.Contains(body, "stale fencing token") {
		t.Fatalf("stale call: %d %s", status, body)
	}

	got := lookup(charges, "k1", "")
	if len(got) != 2 || got[0]["id"] != "ch_1" || got[0]["amount"] != 100.0 || got[0]["currency"] != "EUR" || got[0]["status"] != "succeeded" {
		t.Fatalf("lookup of /charges k1: %v", got)
	}
	if got := lookup(transfers, "k1", ""); len(got) != 1 || got[0]["id"] != "ch_2" {
		t.Fatalf("lookup of /transfers k1: %v", got)
	}
	if got := lookup(charges, "k3", "9"); len(got) != 0 {
		t.Fatalf("lookup of an unknown key: %v", got)
	}
	// The lookup with token 9 fenced k3: an older holder's call lands too late.
	if status, _ := downstreamCall(t, "POST", charges, "k3", "8", "{}"); status != 409 {
		t.Fatalf("call below a lookup's fence: %d, want 409", status)
	}
	if status, _ := downstreamCall(t, "POST", charges, "k3", "9", "not json"); status != 200 {
		t.Fatalf("call at the lookup's token: %d, want 200", status)
	}
	if got := lookup(charges, "k3", ""); len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("a body that is no JSON object gives id and status only: %v", got)
	}
	if status, _ := downstreamCall(t, "GET", charges, "", "", ""); status != 400 {
		t.Fatalf("lookup without a key: %d, want 400", status)
	}

	calls := d.Calls()
	if len(calls) != len(steps)+3 {
		t.Fatalf("%d calls recorded, want %d (lookups are not calls)", len(calls), len(steps)+3)
	}
	for _, c := range calls {
		if (c.Status == 200) != (c.ID != "") {
			t.Errorf("call %+v: applied iff answered 200", c)
		}
	}
}
