package blackbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/idembench/idembench/checker"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
)

func TestParseTargetErrors(t *testing.T) {
	const op = "operation: {path: /p}\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"empty", "", "empty file"},
		{"unknown field", "name: x\nbase_url: http://127.0.0.1:1\n" + op + "colour: red\n", "line 4: field colour not found"},
		{"unknown nested field", "name: x\nbase_url: http://127.0.0.1:1\noperation:\n  path: /p\n  verb: POST\n", "line 5: field verb not found"},
		{"no name", "base_url: http://127.0.0.1:1\n" + op, "name: required"},
		{"no base url", "name: x\n" + op, "base_url: required"},
		{"bad base url", "name: x\nbase_url: ftp://h\n" + op, "want http://host:port"},
		{"no path", "name: x\nbase_url: http://127.0.0.1:1\noperation: {method: POST}\n", "path: required"},
		{"unknown template field", "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p, body: '{{.Nope}}'}\n", "operation.body"},
		{"broken template", "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: '/p/{{.Key'}\n", "operation.path"},
		{"bad success", "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p, success: [404]}\n", "not a 2xx"},
		{"bad resource id", "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p, resource_id: id}\n", "resource_id"},
		{"bad oracle", "name: x\nbase_url: http://127.0.0.1:1\n" + op + "oracle: {kind: psychic}\n", `unknown "psychic"`},
		{"downstream without start", "name: x\nbase_url: http://127.0.0.1:1\n" + op + "oracle: {kind: downstream}\n", "needs a start command"},
		{"downstream unused", "name: x\nstart: {command: [srv]}\n" + op + "oracle: {kind: downstream}\n", "{{.DownstreamURL}}"},
		{"sql without query", "name: x\nbase_url: http://127.0.0.1:1\n" + op + "oracle: {kind: sql}\n", "postgres_url and query"},
		{"bad duration", "name: x\nstart: {command: [srv], ready_timeout: soon}\n" + op, `"soon" is not a duration`},
		{"unknown deviation", "name: x\nbase_url: http://127.0.0.1:1\n" + op + "conformance: {deviations: {teleport: no}}\n", `unknown probe "teleport"`},
		{"two documents", "name: x\nbase_url: http://127.0.0.1:1\n" + op + "---\nname: y\n", "more than one YAML document"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTarget(strings.NewReader(tc.yaml), "t.yaml")
			if !errors.Is(err, ErrUsage) || checker.ExitCode(err) != checker.ExitUsage {
				t.Fatalf("err %v, want ErrUsage", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.yaml") {
				t.Errorf("err %q does not name the source and %q", err, tc.want)
			}
		})
	}
}

func TestSpecErrors(t *testing.T) {
	base := func() *Target {
		return mustParseTarget(t, "name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p}\n", "t.yaml")
	}
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"no target", Spec{Duration: time.Second}, "no target"},
		{"no duration", Spec{Target: base()}, "duration"},
		{"kill without start", Spec{Target: base(), Duration: time.Second, Faults: []chaos.Fault{{Kind: history.FaultKill}}}, "needs a target with a start command"},
		{"unknown fault", Spec{Target: base(), Duration: time.Second, Faults: []chaos.Fault{{Kind: "meteor"}}}, `unknown kind "meteor"`},
		{"fault after the end", Spec{Target: base(), Duration: time.Second, Faults: []chaos.Fault{{Kind: history.FaultReset, Start: 2 * time.Second}}}, "within the duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.spec)
			if checker.ExitCode(err) != checker.ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a usage error naming %q", err, tc.want)
			}
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestEnvironmentErrors(t *testing.T) {
	target := func(yaml string) *Target {
		return mustParseTarget(t, yaml, "t.yaml")
	}
	cases := []struct {
		name string
		tg   *Target
		want string
	}{
		{"unreachable", target("name: x\nbase_url: http://" + closedPort(t) + "\noperation: {path: /p}\n"), "unreachable"},
		{"never ready", target("name: x\nstart: {command: [sleep, '60'], ready_timeout: 300ms, env: {BLACKBOX_MARK: never-ready}}\noperation: {path: /p}\n"), "not ready"},
		{"exits at start", target("name: x\nstart: {command: [sh, -c, 'echo boom >&2; exit 3']}\noperation: {path: /p}\n"), "boom"},
		{"no such command", target("name: x\nstart: {command: [/nonexistent/server]}\noperation: {path: /p}\n"), "/nonexistent/server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), Spec{Target: tc.tg, Duration: time.Second})
			if !errors.Is(err, ErrEnvironment) || checker.ExitCode(err) != checker.ExitEnvironment {
				t.Fatalf("err %v, want ErrEnvironment", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q does not say %q", err, tc.want)
			}
		})
	}
	if left := marked("never-ready"); len(left) > 0 {
		t.Errorf("processes %v of the service that never became ready still run", left)
	}
}

// toyService is a tiny idempotent service (or, with double set, one that
// executes every request) that counts its executions per key at GET
// /effects, or answers garbage there when garbage is set.
type toyService struct {
	double, garbage bool
	onExecute       func(key string) error

	mu      sync.Mutex
	answers map[string][]byte
	effects map[string]int
}

func (s *toyService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if r.URL.Path == "/effects" {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.garbage {
				fmt.Fprint(w, "<html>effects</html>")
				return
			}
			_ = json.NewEncoder(w).Encode(s.effects)
		}
		return
	}
	key, ok := testenv.RequestKey(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.answers[key]; ok && !s.double {
		testenv.Answer(w, b, true)
		return
	}
	if s.onExecute != nil {
		if err := s.onExecute(key); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	s.effects[key]++
	b := fmt.Appendf(nil, `{"id":"%s-%d"}`, key, s.effects[key])
	s.answers[key] = b
	testenv.Answer(w, b, false)
}

func toyTarget(t *testing.T, srv *httptest.Server, oracle string) *Target {
	t.Helper()
	y := fmt.Sprintf("name: toy\nbase_url: %s\noperation: {path: /op, resource_id: /id, replay_header: Idempotency-Replayed}\n%s", srv.URL, oracle)
	return mustParseTarget(t, y, "toy.yaml")
}

func TestQueryOracles(t *testing.T) {
	cases := []struct {
		name            string
		double, garbage bool
		oracle          string
		wantCode        int
	}{
		{"http counts, correct", false, false, "oracle: {kind: http, url: '%s/effects'}\n", checker.ExitPass},
		{"http counts, double execution", true, false, "oracle: {kind: http, url: '%s/effects'}\n", checker.ExitViolation},
		{"http garbage", false, true, "oracle: {kind: http, url: '%s/effects'}\n", checker.ExitEnvironment},
		{"response ids, double execution", true, false, "", checker.ExitViolation},
		{"response ids, correct", false, false, "", checker.ExitPass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			toy := &toyService{double: tc.double, garbage: tc.garbage, answers: map[string][]byte{}, effects: map[string]int{}}
			srv := httptest.NewServer(toy)
			defer srv.Close()
			oracle := tc.oracle
			if strings.Contains(oracle, "%s") {
				oracle = fmt.Sprintf(oracle, srv.URL)
			}
			tg := toyTarget(t, srv, oracle+"conformance: {skip: true}\n")
			out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 300 * time.Millisecond, Clients: 2,
				Keys: keysWithCopies()})
			if checker.ExitCode(err) != tc.wantCode {
				t.Fatalf("exit %d (%v), want %d", checker.ExitCode(err), err, tc.wantCode)
			}
			if tc.garbage && !errors.Is(err, ErrOracle) {
				t.Errorf("err %v, want ErrOracle", err)
			}
			if tc.wantCode == checker.ExitViolation && out.Check.Result("I1").Violations == 0 {
				t.Errorf("double execution not reported as I1: %v", out.Check.Violated())
			}
			if tc.wantCode == checker.ExitPass && out.Check.Stats.Effects == 0 {
				t.Errorf("no effects came from the oracle")
			}
		})
	}
}
