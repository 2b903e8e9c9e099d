package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMetricsScrape runs the server, sends a scripted series of requests
// and finds the expected count per transition on /metrics.
func TestMetricsScrape(t *testing.T) {
	eachBackend(t, testMetricsScrape)
}

func testMetricsScrape(t *testing.T, backend string, args []string) {
	url := startServer(t, args)

	id := time.Now().UnixNano()
	a, b := fmt.Sprintf("m-a-%d", id), fmt.Sprintf("m-b-%d", id)
	const pay, other = `{"amount":1,"currency":"EUR"}`, `{"amount":2,"currency":"EUR"}`
	script := []struct {
		key, body string
		status    int
	}{
		{a, pay, 201},             // acquired, completed
		{a, pay, 201},             // replayed
		{`"` + a + `"`, pay, 201}, // replayed: the quoted key is the same key
		{a, other, 422},           // mismatch
		{b, `{"amount":-1}`, 422}, // acquired, completed (the handler's 422 is stored)
		{b, `{"amount":-1}`, 422}, // replayed
		{"", pay, 400},            // missing key: the engine is not called
		{`"x", "y"`, pay, 400},    // a list: the engine is not called
	}
	for i, s := range script {
		if status, _, body := call(t, "POST", url+"/payments", s.key, s.body); status != s.status {
			t.Fatalf("step %d: %d %s, want %d", i, status, body, s.status)
		}
	}

	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	got := transitionCounts(t, string(text), backend)
	want := map[string]int{
		"acquired/ok":        2,
		"completed/ok":       2,
		"replayed/completed": 3,
		"mismatch/completed": 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("idem_transitions_total by transition/outcome (-want +got):\n%s", d)
	}
	for _, h := range []string{"idem_claim_duration_seconds_count", "idem_func_duration_seconds_count", "idem_finish_duration_seconds_count"} {
		if !strings.Contains(string(text), h) {
			t.Errorf("no %s in /metrics", h)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

var seriesRE = regexp.MustCompile(`^idem_transitions_total\{(.*)\} (\d+)$`)

// transitionCounts parses the idem_transitions_total series into
// transition/outcome -> value, checking the backend label.
func transitionCounts(t *testing.T, text, backend string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		m := seriesRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range regexp.MustCompile(`(\w+)="([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
			labels[kv[1]] = kv[2]
		}
		if labels["backend"] != backend {
			t.Fatalf("series %q: backend label %q", line, labels["backend"])
		}
		n, _ := strconv.Atoi(m[2])
		out[labels["transition"]+"/"+labels["outcome"]] += n
	}
	return out
}
