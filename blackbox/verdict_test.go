package blackbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/workload"
)

// newBodyToy returns testenv's Idempotency-Key toy answering a reused key
// with another body with mismatchStatus.
func newBodyToy(mismatchStatus int) *testenv.IdemToy {
	return &testenv.IdemToy{MismatchStatus: mismatchStatus}
}

func bodyToyTarget(t *testing.T, url, extra string) *Target {
	t.Helper()
	y := fmt.Sprintf("name: toy\nbase_url: %s\noperation:\n  path: /op\n  body: '{\"amount\": {{.Amount}}}'\n  resource_id: /id\n  replay_header: Idempotency-Replayed\n%s", url, extra)
	return mustParseTarget(t, y, "toy.yaml")
}

// TestUndeclaredStatus: a service that answers a reused key with another
// body with 417 is correct. Undeclared, the 417 is reported as a status
// the target does not declare, never judged as a stored failure (no I3 or
// I4 against the key's 201); declared as mismatch_status it is a mismatch.
func TestUndeclaredStatus(t *testing.T) {
	srv := httptest.NewServer(newBodyToy(http.StatusExpectationFailed))
	defer srv.Close()
	spec := func(tg *Target) Spec {
		return Spec{Target: tg, Seed: 3, Duration: 400 * time.Millisecond, Clients: 4,
			Keys: workload.Keys{Concurrent: 1, Delayed: 1, Delay: 10 * time.Millisecond, MismatchRate: 0.3}}
	}
	for _, declared := range []bool{false, true} {
		t.Run(fmt.Sprint("declared=", declared), func(t *testing.T) {
			extra := ""
			if declared {
				extra = "  mismatch_status: [417]\n"
			}
			out, err := Run(context.Background(), spec(bodyToyTarget(t, srv.URL, extra)))
			if err != nil {
				t.Fatalf("correct service answering 417: %v (violations %+v)", err, out.Check.Violations[:min(3, len(out.Check.Violations))])
			}
			notes := strings.Join(out.Notes, "\n")
			if declared == strings.Contains(notes, "undeclared status: 417") {
				t.Errorf("declared=%v, notes:\n%s", declared, notes)
			}
			var mismatch ProbeResult
			for _, p := range out.Conformance {
				if p.ID == ProbeMismatch {
					mismatch = p
				}
			}
			switch {
			case declared && mismatch.Status != ProbePass:
				t.Errorf("declared 417: mismatch probe %+v, want a pass", mismatch)
			case !declared && (mismatch.Status != ProbeWarn || !strings.Contains(mismatch.Observed, "does not declare")):
				t.Errorf("undeclared 417: mismatch probe %+v, want a warning naming the undeclared status", mismatch)
			}
			if out.Summary.Outcomes["mismatch"] == 0 && declared {
				t.Errorf("declared: no mismatch outcome: %v", out.Summary.Outcomes)
			}
		})
	}
}

// TestSecondExecutionNotReplayed: without a replay marker, a second
// execution of a key (another answer) is counted as executed, not as
// replayed; a replay (the same answer) is counted as replayed.
func TestSecondExecutionNotReplayed(t *testing.T) {
	for _, double := range []bool{false, true} {
		t.Run(fmt.Sprint("double=", double), func(t *testing.T) {
			toy := newBodyToy(http.StatusUnprocessableEntity)
			toy.NoMarker, toy.Double = true, double
			srv := httptest.NewServer(toy)
			defer srv.Close()
			tg := bodyToyTarget(t, srv.URL, "conformance: {skip: true}\n")
			tg.Operation.ReplayHeader = ""
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 300 * time.Millisecond, Clients: 2, Keys: keysWithCopies(),
				Retry: workload.Retry{Timeout: 5 * time.Second}})
			if double != errors.Is(err, ErrViolation) {
				t.Fatalf("double=%v: err %v", double, err)
			}
			executions := toy.Executions()
			// Every answer came back (no faults, long timeouts), but the
			// last requests of the drain may be cut: a few executions
			// without a recorded answer.
			got := out.Summary.Outcomes
			if got["executed"] > executions || got["executed"] < executions-8 {
				t.Errorf("executed %d, the service executed %d times (outcomes %v)", got["executed"], executions, got)
			}
			if double && got["replayed"] != 0 || !double && got["replayed"] == 0 {
				t.Errorf("double=%v: replayed %d (outcomes %v)", double, got["replayed"], got)
			}
		})
	}
}

// getThenSet is an idempotency layer whose claim is a plain Redis GET then
// SET, no NX: copies that race both read nothing and both execute.
type getThenSet struct {
	rdb    *redis.Client
	prefix string
	mu     sync.Mutex
	n      int
}

func (s *getThenSet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		return
	}
	key, ok := testenv.RequestKey(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	rk := s.prefix + key
	if b, err := s.rdb.Get(ctx, rk).Bytes(); err == nil {
		testenv.Answer(w, b, true)
		return
	}
	s.mu.Lock()
	s.n++
	b := fmt.Appendf(nil, `{"id":"%s-%d"}`, key, s.n)
	s.mu.Unlock()
	if err := s.rdb.Set(ctx, rk, b, time.Minute).Err(); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusCreated)
	w.Write(b)
}

// racedGetThenSet runs the conformance probes (and a token workload)
// against a GET-then-SET service on seed and reports whether the racing
// probe found the double execution, and its copies' spread.
func racedGetThenSet(t *testing.T, rdb *redis.Client, seed int64) (bool, float64) {
	t.Helper()
	svc := &getThenSet{rdb: rdb, prefix: fmt.Sprintf("h26-race-%d-%d:", seed, time.Now().UnixNano())}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	out, err := Run(context.Background(), Spec{Target: bodyToyTarget(t, srv.URL, ""), Seed: seed, Duration: 50 * time.Millisecond, Clients: 1})
	for _, p := range out.Conformance {
		if p.ID == ProbeConcurrent {
			return p.Status == ProbeFail && p.Class == ClassDoubleExecution && checker.ExitCode(err) == checker.ExitViolation, p.SpreadMs
		}
	}
	t.Fatalf("no concurrent-duplicate row: %v", err)
	return false, 0
}

// TestRacingProbe: the racing probe measures how far apart its copies left
// and catches a claim that is a plain GET then SET;
// IDEM_BLACKBOX_SWEEP=20 runs it on twenty seeds (at least 19 must catch
// it).
func TestRacingProbe(t *testing.T) {
	rdb := redis.NewClient(mustRedisOptions(t))
	defer rdb.Close()
	n := 3
	if s := os.Getenv("IDEM_BLACKBOX_SWEEP"); s != "" && !testing.Short() {
		n = sweepSeeds(t)
	}
	hits, worst := 0, 0.0
	for seed := range int64(n) {
		hit, spread := racedGetThenSet(t, rdb, seed+1)
		if hit {
			hits++
		}
		worst = max(worst, spread)
	}
	t.Logf("GET-then-SET caught by the racing probe on %d of %d seeds; copies at most %.3f ms apart", hits, n, worst)
	if hits*20 < n*19 {
		t.Errorf("caught on %d of %d seeds, want at least 19 in 20", hits, n)
	}
	// A round that found a double execution counts whatever its spread (the
	// double charge is real); the spread must still be measured. That a
	// passing round never left more than raceSpread apart is the probe's
	// rule, tested without timing in TestConcurrentJudgesOnlyTightRounds.
	if worst <= 0 {
		t.Errorf("copies' spread not measured (%.3f ms)", worst)
	}
}

func mustRedisOptions(t *testing.T) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestStartRelativeToTarget: a target's start command and dir are taken
// from the target file's directory, wherever the harness runs, and the
// service's output is saved in the run directory.
func TestStartRelativeToTarget(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(serverBin, filepath.Join(dir, "httpserver")); err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(exampleYAML, "command: [%q,", "command: [./httpserver,", 1)
	y = strings.Replace(y, "%s]", "]", 1)
	file := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := LoadTarget(file)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Start.Dir != dir {
		t.Errorf("start.dir %q, want the target file's directory %q", tg.Start.Dir, dir)
	}
	runDir := filepath.Join(t.TempDir(), "run")
	out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 200 * time.Millisecond, Clients: 2, Dir: runDir})
	if err != nil {
		t.Fatalf("%v (conformance %+v)", err, out.Conformance)
	}
	log, err := os.ReadFile(filepath.Join(runDir, ServiceLogFile))
	if err != nil || !strings.Contains(string(log), "--- idembench: start 1") || !strings.Contains(string(log), "payments API on") {
		t.Errorf("%s: %v\n%s", ServiceLogFile, err, log)
	}
}

// TestCorrectServerCard: examples/httpserver on Redis, through every
// network fault, a pause and a kill with restart, gets a report card that
// is all pass. The kill finds charges in flight (the provider answers in
// 20 ms); the server recovers them on take-over (recovery.go) instead of
// leaving their keys stuck (I6) or charging them again (I1).
func TestCorrectServerCard(t *testing.T) {
	tg := exampleTarget(t, backendFlags(t, "redis")...)
	spec := killSpec(tg, 11)
	spec.Dir = t.TempDir()
	out, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("%v (violations %+v)", err, out.Check.Violations[:min(3, len(out.Check.Violations))])
	}
	for _, r := range out.Card.Rows {
		if r.Status != CardPass {
			t.Errorf("%s: %s, want pass (%s)", r.ID, r.Status, r.Evidence)
		}
	}
	t.Logf("%d charge(s) recovered after the kill", recoveries(t, spec.Dir))
}

// probeRow returns the row of probe id in out.
func probeRow(out Outcome, id string) ProbeResult {
	for _, p := range out.Conformance {
		if p.ID == id {
			return p
		}
	}
	return ProbeResult{}
}

// TestProfiles: the error-policy probe grades the profile the target
// claims: a stored 5xx passes under ietf and stripe and is a protocol
// deviation under cache-2xx-only; a 5xx that is not stored passes under
// ietf and cache-2xx-only and is a deviation under stripe.
func TestProfiles(t *testing.T) {
	cases := []struct {
		flaw, profile string
		want          string
	}{
		{"stored-5xx", ProfileIETF, ProbePass},
		{"stored-5xx", ProfileStripe, ProbePass},
		{"stored-5xx", ProfileCache2xx, ProbeFail},
		{"", ProfileIETF, ProbePass},
		{"", ProfileStripe, ProbeFail},
		{"", ProfileCache2xx, ProbePass},
	}
	for _, tc := range cases {
		t.Run(tc.flaw+"/"+tc.profile, func(t *testing.T) {
			var tg *Target
			if tc.flaw != "" {
				tg = exampleTarget(t, "--flaw", tc.flaw)
			} else {
				tg = exampleTarget(t)
			}
			tg.Conformance.Profile = tc.profile
			out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 100 * time.Millisecond, Clients: 2})
			row := probeRow(out, ProbeErrorStored)
			if row.Status != tc.want {
				t.Fatalf("error-policy %+v, want %s", row, tc.want)
			}
			wantCode := checker.ExitPass
			if tc.want == ProbeFail {
				wantCode = checker.ExitDeviation
				if row.Level != LevelMust || row.Class != ClassDeviation {
					t.Errorf("row %+v, want a MUST protocol deviation", row)
				}
			}
			if checker.ExitCode(err) != wantCode {
				t.Errorf("err %v (exit %d), want exit %d", err, checker.ExitCode(err), wantCode)
			}
		})
	}
}

// busyToy answers a duplicate that arrives while the first request runs
// with 409 and no Retry-After, then replays.
type busyToy struct {
	mu      sync.Mutex
	running map[string]bool
	answers map[string][]byte
	n       int
}

func (s *busyToy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if r.Method != http.MethodPost || key == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if b, ok := s.answers[key]; ok {
		s.mu.Unlock()
		testenv.Answer(w, b, true)
		return
	}
	if s.running[key] {
		s.mu.Unlock()
		w.WriteHeader(http.StatusConflict) // no Retry-After
		return
	}
	s.running[key] = true
	s.n++
	b := fmt.Appendf(nil, `{"id":"%s-%d"}`, key, s.n)
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	s.answers[key], s.running[key] = b, false
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	w.Write(b)
}

// TestRetryAfterIsMay: a 409 without Retry-After is a MAY of the draft: a
// warning that counts the executions first (one), never a failed run.
func TestRetryAfterIsMay(t *testing.T) {
	srv := httptest.NewServer(&busyToy{running: map[string]bool{}, answers: map[string][]byte{}})
	defer srv.Close()
	// The toy ignores bodies: declared, that is not what this test is about.
	tg := bodyToyTarget(t, srv.URL, "conformance: {deviations: {different-body: the toy ignores bodies}}\n")
	out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 100 * time.Millisecond, Clients: 2})
	if err != nil {
		t.Fatalf("err %v (conformance %+v)", err, out.Conformance)
	}
	row := probeRow(out, ProbeConcurrent)
	if row.Status != ProbeWarn || row.Level != LevelMay || !strings.Contains(row.Observed, "1 executed") || !strings.Contains(row.Observed, "without Retry-After") {
		t.Errorf("concurrent-duplicate %+v, want a MAY warning after counting one execution", row)
	}
	if out.Verdict != checker.VerdictOK || !strings.Contains(Headline(&out), "warning") {
		t.Errorf("verdict %q, headline %q", out.Verdict, Headline(&out))
	}
}

// TestConcurrentJudgesOnlyTightRounds: a passing round whose copies left
// more than raceSpread apart is sent again and never judged; the reported
// spread is that of the judged rounds; a failing round counts whatever
// its spread; too few tight rounds is a SHOULD warning, never a pass.
func TestConcurrentJudgesOnlyTightRounds(t *testing.T) {
	ctx := context.Background()
	spreads := func(ms ...float64) func(context.Context, string) finding {
		i := 0
		return func(context.Context, string) finding {
			f := passed("4 copies: one execution")
			f.spreadMs = ms[i%len(ms)]
			i++
			return f
		}
	}
	f := raceRoundsOf(ctx, "k", spreads(0.2, 5, 0.4))
	if f.status != ProbePass || f.spreadMs > 1 {
		t.Errorf("mixed rounds: status %s, spread %.3f ms; want pass within 1 ms (%s)", f.status, f.spreadMs, f.observed)
	}
	if !strings.Contains(f.observed, "were sent again") {
		t.Errorf("loose rounds not reported: %s", f.observed)
	}
	f = raceRoundsOf(ctx, "k", spreads(3))
	if f.status != ProbeWarn || f.level != LevelShould {
		t.Errorf("all rounds loose: status %s level %s, want a SHOULD warning (%s)", f.status, f.level, f.observed)
	}
	fail := func(context.Context, string) finding {
		f := doubled("2 executed")
		f.spreadMs = 7
		return f
	}
	f = raceRoundsOf(ctx, "k", fail)
	if f.class != ClassDoubleExecution || f.spreadMs != 7 {
		t.Errorf("loose failing round: class %s spread %.3f, want double execution at 7 ms", f.class, f.spreadMs)
	}
}
