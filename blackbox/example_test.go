package blackbox_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/idembench/idembench/blackbox"
	"github.com/idembench/idembench/checker"
)

func ExampleParseTarget() {
	tg, err := blackbox.ParseTarget(strings.NewReader(`
name: payments
base_url: http://127.0.0.1:8089
operation:
  path: /payments
  body: '{"amount": {{.Amount}}, "ref": "{{.Key}}"}'
  resource_id: /id
  replay_header: "Idempotency-Replayed: true"
`), "payments.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	op := tg.Operation
	fmt.Println(op.Method, op.Path, op.KeyHeader, op.Success, tg.Oracle.Kind)

	_, err = blackbox.ParseTarget(strings.NewReader("name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p}\nretries: 3\n"), "bad.yaml")
	fmt.Println(checker.ExitCode(err), err)
	// Output:
	// POST /payments Idempotency-Key [200 201] response
	// 2 blackbox: invalid spec: bad.yaml: yaml: unmarshal errors:
	//   line 4: field retries not found in type blackbox.targetFile
}

// keyedStore is the idempotency layer of a tiny service: one answer per
// key, 422 for another body, a replay marker on replays.
type keyedStore struct {
	mu      sync.Mutex
	bodies  map[string][]byte
	answers map[string]string
	n       int
}

func (s *keyedStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "key required", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bodies[key]; ok {
		if !bytes.Equal(b, body) {
			http.Error(w, "key reused", http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Idempotency-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, s.answers[key])
		return
	}
	s.n++
	s.bodies[key], s.answers[key] = body, fmt.Sprintf(`{"id":"pay_%d"}`, s.n)
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, s.answers[key])
}

func ExampleRun() {
	srv := httptest.NewServer(&keyedStore{bodies: map[string][]byte{}, answers: map[string]string{}})
	defer srv.Close()
	tg, err := blackbox.ParseTarget(strings.NewReader(`
name: tiny
base_url: `+srv.URL+`
operation:
  path: /payments
  body: '{"amount": {{.Amount}}}'
  resource_id: /id
  replay_header: Idempotency-Replayed
`), "tiny.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := blackbox.Run(context.Background(), blackbox.Spec{Target: tg, Seed: 1, Duration: 200 * time.Millisecond, Clients: 2})
	fmt.Println("verdict:", out.Verdict, "exit:", checker.ExitCode(err))
	for _, p := range out.Conformance {
		fmt.Println(p.ID, p.Status)
	}
	// Output:
	// verdict: ok exit: 0
	// missing-key pass
	// different-body pass
	// concurrent-duplicate pass
	// replay pass
	// error-policy skipped
	// isolation skipped
}
