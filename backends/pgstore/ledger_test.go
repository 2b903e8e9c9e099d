package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/idem"
)

func TestApplyFencedRejectsStaleTokens(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	steps := []struct {
		token idem.Token
		want  bool
	}{
		{5, true},  // first writer
		{5, true},  // same execution again
		{9, true},  // successor
		{5, false}, // stale holder
		{8, false}, // stale holder
		{9, true},
		{10, true},
	}
	for _, st := range steps {
		applied, err := s.ApplyFenced(ctx, s.pool, "charge:1", st.token)
		if err != nil || applied != st.want {
			t.Fatalf("ApplyFenced(token %d) = %v, %v; want %v", st.token, applied, err, st.want)
		}
	}
	if tok, ok, err := s.FencedToken(ctx, s.pool, "charge:1"); err != nil || !ok || tok != 10 {
		t.Fatalf("FencedToken = %d, %v, %v; want 10", tok, ok, err)
	}
	if _, ok, err := s.FencedToken(ctx, s.pool, "charge:never"); err != nil || ok {
		t.Fatalf("FencedToken of an unknown effect = %v, %v", ok, err)
	}
	if _, err := s.ApplyFenced(ctx, s.pool, "charge:1", 0); err == nil {
		t.Fatal("ApplyFenced with token 0 succeeded")
	}
}

// TestApplyFencedInTransaction checks that the recorded token rolls back with
// the transaction, and that a concurrent applier waits for the holder's
// transaction instead of racing it.
func TestApplyFencedInTransaction(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if applied, err := s.ApplyFenced(ctx, tx, "e", 20); err != nil || !applied {
		t.Fatalf("in tx: %v, %v", applied, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.FencedToken(ctx, s.pool, "e"); ok {
		t.Fatal("rolled-back application is recorded")
	}

	// The newer holder (token 30) applies in an open transaction; the stale
	// one (token 25) must wait for it and then be rejected.
	tx, err = s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if applied, err := s.ApplyFenced(ctx, tx, "e", 30); err != nil || !applied {
		t.Fatalf("token 30: %v, %v", applied, err)
	}
	var wg sync.WaitGroup
	var staleApplied bool
	var staleErr error
	wg.Go(func() {
		staleApplied, staleErr = s.ApplyFenced(ctx, s.pool, "e", 25)
	})
	time.Sleep(50 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if staleErr != nil || staleApplied {
		t.Fatalf("stale token 25 after 30 committed: %v, %v; want rejected", staleApplied, staleErr)
	}
}

// TestApplyFencedWithDoTx is the intended use: the effect, its fence record
// and the completion share one transaction.
func TestApplyFencedWithDoTx(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	res, err := s.DoTx(ctx, "k", fp("a"), TxOptions{}, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		l, _ := idem.LeaseFrom(ctx)
		applied, err := s.ApplyFenced(ctx, tx, "effect:k", l.Token)
		if err != nil || !applied {
			t.Errorf("ApplyFenced = %v, %v", applied, err)
		}
		return resp("ok"), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok, err := s.FencedToken(ctx, s.pool, "effect:k"); err != nil || !ok || tok != res.Token {
		t.Fatalf("FencedToken = %d, %v, %v; want %d", tok, ok, err, res.Token)
	}
}
