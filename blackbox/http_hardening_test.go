package blackbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

// TestNoRequestSucceeded: a target every request of which is refused
// (404, 400) or fails (503) has nothing to check. It is not a violation:
// a refusal is a usage error (the target file), a failure an environment
// error, and the error says what came back, with a sample, whatever the
// conformance probes found.
func TestNoRequestSucceeded(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   int
	}{
		{http.StatusNotFound, "404 page not found\n", checker.ExitUsage},
		{http.StatusBadRequest, `{"error":"amount missing"}`, checker.ExitUsage},
		{http.StatusServiceUnavailable, "down for maintenance", checker.ExitEnvironment},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			tg := mustParseTarget(t, "name: broken\nbase_url: "+srv.URL+"\noperation: {path: /op}\n", "broken.yaml")
			dir := filepath.Join(t.TempDir(), "run")
			out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 300 * time.Millisecond, Clients: 2, Dir: dir,
				Retry: workload.Retry{MaxAttempts: 2, Timeout: 300 * time.Millisecond}})
			if !errors.Is(err, ErrNoSuccess) || checker.ExitCode(err) != tc.want {
				t.Fatalf("err %v (exit %d), want ErrNoSuccess with exit %d", err, checker.ExitCode(err), tc.want)
			}
			if errors.Is(err, ErrViolation) {
				t.Errorf("a run with nothing to check is a violation: %v", err)
			}
			msg := err.Error()
			for _, want := range []string{fmt.Sprintf("no request succeeded (%d × ", tc.status), "sample response: " + fmt.Sprint(tc.status) + " ", srv.URL} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
			if len(out.Conformance) == 0 {
				t.Errorf("the conformance probes did not run; the test needs them (they all fail)")
			}
			if _, err := os.Stat(filepath.Join(dir, reports.SummaryFile)); err == nil {
				t.Errorf("a run with nothing to check wrote a summary")
			}
		})
	}
}

// TestTargetLimits: control bytes where a request line or a header is
// built, values beyond their limits and a file larger than 1 MiB are
// usage errors that name the field and the limit.
func TestTargetLimits(t *testing.T) {
	const base = "name: x\nbase_url: http://127.0.0.1:1\n"
	const op = "operation: {path: /p}\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"CRLF in key_header", base + "operation: {path: /p, key_header: \"Idempotency-Key\\r\\nX-Admin: 1\"}\n", "operation.key_header"},
		{"LF in method", base + "operation: {path: /p, method: \"POST /other HTTP/1.1\\nX: y\"}\n", "operation.method"},
		{"space in method", base + "operation: {path: /p, method: \"GET \"}\n", "operation.method"},
		{"CR in header name", base + "operation: {path: /p, headers: {\"A\\rB\": v}}\n", "operation.headers"},
		{"LF in header value", base + "operation: {path: /p, headers: {X-A: \"v\\nX-B: w\"}}\n", "operation.headers.X-A"},
		{"LF in path", base + "operation: {path: \"/p\\nHost: evil\"}\n", "operation.path"},
		{"CRLF in oracle key_header", base + op + "oracle: {key_header: \"K\\r\\n\"}\n", "oracle.key_header"},
		{"CRLF in replay header", base + "operation: {path: /p, replay_header: \"Replayed\\r\\nX: 1: true\"}\n", "operation.replay_header"},
		{"CRLF in isolation header", base + op + "conformance: {isolation_headers: {X-Tenant: \"b\\r\\nX: y\"}}\n", "conformance.isolation_headers.X-Tenant"},
		{"ready_timeout 100000h", "name: x\nstart: {command: [srv], ready_timeout: 100000h}\n" + op, "start.ready_timeout: 100000h0m0s is above the limit of 10m0s"},
		{"negative ready_timeout", "name: x\nstart: {command: [srv], ready_timeout: -1s}\n" + op, "line 2: negative duration"},
		{"oracle latency 1h", "name: x\nstart: {command: [srv, '{{.DownstreamURL}}']}\n" + op + "oracle: {kind: downstream, latency: 1h}\n", "oracle.latency: 1h0m0s is above the limit of 10m0s"},
		{"amount beyond the limit", base + "operation: {path: /p, amount_min: -9223372036854775808, amount_max: 9223372036854775807}\n", "operation.amount_min"},
		{"too many statuses", base + "operation: {path: /p, success: [" + strings.Repeat("200, ", MaxEntries) + "201]}\n", "operation.success: 101 entries, above the limit of 100"},
		{"long name", "name: " + strings.Repeat("n", MaxNameLen+1) + "\nbase_url: http://127.0.0.1:1\n" + op, "name: 101 bytes"},
		{"NUL in an argument", "name: x\nstart: {command: [srv, \"a\\0b\"]}\n" + op, "start.command[1]"},
		{"bad env name", "name: x\nstart: {command: [srv], env: {\"A=B\": c}}\n" + op, "start.env"},
		{"file over 1 MiB", base + op + "# " + strings.Repeat("x", MaxTargetFileSize) + "\n", "larger than the limit of 1048576 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTarget(strings.NewReader(tc.yaml), "t.yaml")
			if checker.ExitCode(err) != checker.ExitUsage {
				t.Fatalf("err %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q does not name %q", err, tc.want)
			}
		})
	}

	// A 50 MB file is refused by its size, before it is read.
	huge := testenv.SparseFile(t, "huge.yaml", 50<<20)
	_, err := LoadTarget(huge)
	if checker.ExitCode(err) != checker.ExitUsage || !strings.Contains(err.Error(), "52428800 bytes, larger than the limit of 1048576 bytes") {
		t.Errorf("50 MB target: %v, want a usage error naming the size and the limit", err)
	}
}

// TestSpecLimits: the waits and counts of a Spec have limits, checked
// before anything starts.
func TestSpecLimits(t *testing.T) {
	tg := func() *Target {
		return mustParseTarget(t, "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p}\n", "t.yaml")
	}
	many := make([]chaos.Fault, MaxFaults+1)
	for i := range many {
		many[i] = chaos.Fault{Kind: history.FaultReset}
	}
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"negative probe_after", Spec{ProbeAfter: -time.Second}, "probe_after: -1s is negative"},
		{"probe_after 100h", Spec{ProbeAfter: 100 * time.Hour}, "probe_after: 100h0m0s is above the limit of 10m0s"},
		{"check_timeout 2h", Spec{CheckTimeout: 2 * time.Hour}, "check_timeout"},
		{"101 faults", Spec{Faults: many}, "faults: 101 entries, above the limit of 100"},
		{"fault for 1h", Spec{Faults: []chaos.Fault{{Kind: history.FaultReset, Duration: time.Hour}}}, "duration and latency at most 10m0s"},
		{"duration 48h", Spec{Duration: 48 * time.Hour}, "duration: 48h0m0s is above the limit of 24h0m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.spec
			sp.Target = tg()
			if sp.Duration == 0 {
				sp.Duration = time.Second
			}
			err := sp.Validate()
			if checker.ExitCode(err) != checker.ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want a usage error naming %q", err, tc.want)
			}
			if _, err := Run(context.Background(), sp); checker.ExitCode(err) != checker.ExitUsage {
				t.Errorf("Run: %v, want the same usage error", err)
			}
		})
	}
}

// TestServiceExitIsEnvironment: a started service that dies during the
// run without a kill fault ends the run early with ErrServiceExited (exit
// 5) naming it, not a verdict on what the dead service answered.
func TestServiceExitIsEnvironment(t *testing.T) {
	// The example service, stopped by timeout(1) after 1.5 s.
	tg := exampleTarget(t)
	tg.Start.Command = append([]string{"timeout", "1.5"}, tg.Start.Command...)
	tg.Conformance.Skip = true
	start := time.Now()
	_, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 6 * time.Second, Clients: 2,
		Retry: workload.Retry{Timeout: 300 * time.Millisecond}})
	if !errors.Is(err, ErrServiceExited) || checker.ExitCode(err) != checker.ExitEnvironment {
		t.Fatalf("err %v (exit %d), want ErrServiceExited (exit 5)", err, checker.ExitCode(err))
	}
	if !strings.Contains(err.Error(), `"timeout" stopped during the run (exit status 124)`) {
		t.Errorf("the error does not name the service and its exit: %v", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the run went on for %s after the service died at 1.5 s", took)
	}
}

// TestInterruptSavesHistory: a run whose ctx ends during the traffic
// writes the history so far and conformance.json to its directory and
// returns ctx's error.
func TestInterruptSavesHistory(t *testing.T) {
	var calls atomic.Int64
	toy := &toyService{answers: map[string][]byte{}, effects: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		toy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tg := toyTarget(t, srv, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for calls.Load() < 50 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	_, err := Run(ctx, Spec{Target: tg, Seed: 1, Duration: time.Hour, Clients: 2, Dir: dir})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "history so far written to "+dir) {
		t.Fatalf("err %v, want context.Canceled and where the history went", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the cancelled run took %s", took)
	}
	b, err := os.ReadFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Decode(bytes.NewReader(b))
	if err != nil || len(h.Ops) == 0 {
		t.Fatalf("history so far: %v, %d ops; want some", err, opsIn(h))
	}
	if _, err := os.Stat(filepath.Join(dir, ConformanceFile)); err != nil {
		t.Errorf("conformance.json: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.SummaryFile)); err == nil {
		t.Errorf("an interrupted run wrote a summary: it was not checked")
	}
}

func opsIn(h *history.History) int {
	if h == nil {
		return 0
	}
	return len(h.Ops)
}

// TestNoSuccessClass: which answers make a run without a success a
// problem of the target file (exit 2) or of the service (exit 5).
func TestNoSuccessClass(t *testing.T) {
	cases := []struct {
		statuses []int // 0: no answer
		want     int
	}{
		{[]int{404}, checker.ExitUsage},
		{[]int{400, 401, 403, 405, 415, 422}, checker.ExitUsage},
		{[]int{404, 0}, checker.ExitUsage}, // timeouts aside, every answer refused
		{[]int{404, 503}, checker.ExitEnvironment},
		{[]int{0}, checker.ExitEnvironment},
		{[]int{409}, checker.ExitEnvironment},
		{[]int{429}, checker.ExitEnvironment},
		{[]int{408}, checker.ExitEnvironment},
		{[]int{302}, checker.ExitEnvironment},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.statuses), func(t *testing.T) {
			tl := newAnswerTally()
			for _, s := range tc.statuses {
				a := answer{status: s, body: []byte("b")}
				if s == 0 {
					a.err = errors.New("context deadline exceeded")
				}
				tl.add(&a, true)
			}
			err := tl.noSuccess("http://127.0.0.1:1")
			if !errors.Is(err, ErrNoSuccess) || checker.ExitCode(err) != tc.want {
				t.Errorf("%v: exit %d, want %d", err, checker.ExitCode(err), tc.want)
			}
		})
	}
}
