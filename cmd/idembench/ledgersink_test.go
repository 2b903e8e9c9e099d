package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/workload"
)

// TestBackendLedgersFenceOnRecover: on the Redis and PostgreSQL effect
// ledgers of worker runs, a recovery lookup raises the key's fence to the
// successor's token, so a stale holder applying after the lookup is
// rejected and only the successor's effect is applied ("fence, then look").
func TestBackendLedgersFenceOnRecover(t *testing.T) {
	ctx := context.Background()
	for _, backend := range []string{backendRedis, backendPostgres} {
		t.Run(backend, func(t *testing.T) {
			var url string
			if backend == backendRedis {
				url = testenv.RedisURL(t)
			} else {
				url = testenv.PostgresURL(t)
			}
			st, err := openStore(ctx, backend, engineIdem, url, url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			l, err := openBackendSink(ctx, st, backend, workload.SinkFenced, url)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := l.(workload.Recoverer)
			if !ok {
				t.Fatal("the fenced ledger cannot recover")
			}
			key := "fence-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			effect := func(tok idem.Token, exec string) workload.Effect {
				return workload.Effect{Key: key, Token: tok, Exec: exec, Response: idem.Response{Status: 200, Body: []byte(exec)}}
			}
			if _, done, err := r.Recover(ctx, key, 7); done || err != nil {
				t.Fatalf("recover before any effect: done %t, err %v", done, err)
			}
			if applied, err := l.Apply(ctx, effect(5, "stale")); err != nil || applied {
				t.Fatalf("stale holder (token 5) after the successor's (token 7) lookup: applied %t, err %v; want rejected", applied, err)
			}
			if applied, err := l.Apply(ctx, effect(7, "successor")); err != nil || !applied {
				t.Fatalf("successor: applied %t, err %v", applied, err)
			}
			resp, done, err := r.Recover(ctx, key, 8)
			if err != nil || !done || string(resp.Body) != "successor" {
				t.Fatalf("recover after the successor: %q %t %v", resp.Body, done, err)
			}
		})
	}
}
