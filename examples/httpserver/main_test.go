package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/internal/testenv"
)

// call sends one request and returns status, replay marker and body.
func call(t *testing.T, method, url, key, body string) (int, bool, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, b := testenv.Send(t, req)
	return resp.StatusCode, resp.Header.Get("Idempotency-Replayed") == "true", strings.TrimSpace(string(b))
}

func TestPaymentsAPI(t *testing.T) {
	svc := startService(t, serviceOptions{})
	created := `{"id":"pay_000001","amount":100,"currency":"EUR","status":"succeeded"}`
	steps := []struct {
		method, path, key, body string
		status                  int
		replayed                bool
		want                    string // body, or a substring of a problem document
		payments                int
	}{
		{"POST", "/payments", "", `{"amount":100,"currency":"EUR"}`, 400, false, `"reason":"missing_key"`, 0},
		{"POST", "/payments", "k1", `{"amount":100,"currency":"EUR"}`, 201, false, created, 1},
		{"POST", "/payments", "k1", `{"amount":100,"currency":"EUR"}`, 201, true, created, 1},
		{"POST", "/payments", "k1", `{"currency":"EUR","amount":100}`, 201, true, created, 1},
		{"POST", "/payments", "k1", `{"amount":500,"currency":"EUR"}`, 422, false, `"reason":"fingerprint_mismatch"`, 1},
		{"POST", "/payments", "k2", `{"amount":-5,"currency":"EUR"}`, 422, false, `amount must be a positive integer`, 1},
		{"POST", "/payments", "k2", `{"amount":-5,"currency":"EUR"}`, 422, true, `amount must be a positive integer`, 1},
		{"POST", "/payments", "k3", `{"amount":7,"currency":"eur"}`, 422, false, `currency must be`, 1},
		{"POST", "/payments", "k4", `not json`, 400, false, `body must be`, 1},
		{"POST", "/payments", "k5", `{"amount":7,"currency":"USD"}`, 201, false, `"id":"pay_000002"`, 2},
		{"GET", "/payments/pay_000001", "", "", 200, false, created, 2},
		{"GET", "/payments/pay_999999", "", "", 404, false, `no such payment`, 2},
	}
	for i, s := range steps {
		status, replayed, body := call(t, s.method, svc.url+s.path, s.key, s.body)
		if status != s.status || replayed != s.replayed || !strings.Contains(body, s.want) {
			t.Fatalf("step %d (%s %s key %q): %d replayed=%v %s; want %d replayed=%v containing %s",
				i, s.method, s.path, s.key, status, replayed, body, s.status, s.replayed, s.want)
		}
		if n := svc.ledger.count(); n != s.payments {
			t.Fatalf("step %d: %d payments, want %d", i, n, s.payments)
		}
	}
}

func TestConcurrentRetriesCreateOnePayment(t *testing.T) {
	svc := startService(t, serviceOptions{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", svc.url+"/payments", strings.NewReader(`{"amount":1,"currency":"EUR"}`))
			req.Header.Set("Idempotency-Key", "retry-storm")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 201 && resp.StatusCode != 409 {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := svc.ledger.count(); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
}

// lineWriter hands each line written to it to a channel.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(string(p)))
	for sc.Scan() {
		w.lines <- sc.Text()
	}
	return len(p), nil
}

// eachBackend runs test once per backend of the server (memory, redis,
// postgres) with the server's arguments for it.
func eachBackend(t *testing.T, test func(t *testing.T, backend string, args []string)) {
	for _, backend := range []string{"memory", "redis", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			args := []string{"--addr", "127.0.0.1:0", "--backend", backend}
			switch backend {
			case "redis":
				args = append(args, "--redis-url", testenv.RedisURL(t))
			case "postgres":
				args = append(args, "--postgres-url", testenv.PostgresURL(t))
			}
			test(t, backend, args)
		})
	}
}

// startServer runs the server with args until the test ends, when it must
// stop without an error, and returns its base URL.
func startServer(t *testing.T, args []string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := lineWriter{make(chan string, 4)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	var line string
	select {
	case line = <-out.lines:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not start")
	}
	return strings.Fields(strings.TrimPrefix(line, "payments API on "))[0]
}

// TestRun starts the server on each backend, pays once with a fresh key and
// checks that a retry is replayed.
func TestRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ string, args []string) {
		url := startServer(t, args)
		key := fmt.Sprintf("run-%d", time.Now().UnixNano())
		if status, _, _ := call(t, "POST", url+"/payments", key, `{"amount":1,"currency":"EUR"}`); status != 201 {
			t.Fatalf("POST: %d", status)
		}
		if status, _, _ := call(t, "POST", url+"/payments", key, `{"amount":2,"currency":"EUR"}`); status != 422 {
			t.Fatalf("same key, other body: %d, want 422", status)
		}
		if status, replayed, _ := call(t, "POST", url+"/payments", key, `{"amount":1,"currency":"EUR"}`); status != 201 || !replayed {
			t.Fatalf("retry: %d replayed=%v", status, replayed)
		}
	})
}

func TestRunRefusesBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "mysql"}, "unknown --backend"},
		{[]string{"--backend", "redis", "--redis-url", ""}, "needs --redis-url"},
		{[]string{"--backend", "postgres", "--postgres-url", ""}, "needs --postgres-url"},
		{[]string{"--backend", "redis", "--redis-url", "redis://127.0.0.1:1/0"}, "redis at 127.0.0.1:1"},
		{[]string{"--backend", "redis", "--redis-url", "http://x"}, "--redis-url"},
		{[]string{"--backend", "postgres", "--postgres-url", "postgres://postgres@127.0.0.1:1/test?connect_timeout=2"}, "127.0.0.1"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--replay-policy", "always"}, "--replay-policy"},
		{[]string{"--config-check", "maybe"}, "--config-check"},
		{[]string{"--addr", "not an address"}, "not an address"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run(-h) = %v", err)
	}
}
