package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/idem"
)

// newBizStore returns a store with default options and the quoted name of
// a business table created next to its tables.
func newBizStore(t *testing.T) (*Store, string) {
	t.Helper()
	s := newStore(t, Options{})
	name := pgx.Identifier{s.opts.Table + "_biz"}.Sanitize()
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, "CREATE TABLE "+name+" (id text PRIMARY KEY, token bigint NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+name) })
	return s, name
}

// bizRows returns the business rows as id -> token.
func bizRows(t *testing.T, s *Store, biz string) map[string]int64 {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), "SELECT id, token FROM "+biz)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var id string
	var tok int64
	_, err = pgx.ForEachRow(rows, []any{&id, &tok}, func() error { got[id] = tok; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// failAfterInsert is a TxFunc that writes business row "x" and then
// returns resp and err, so that its write must roll back. It stores its
// lease's token in *token unless token is nil.
func failAfterInsert(biz string, token *idem.Token, resp idem.Response, err error) TxFunc {
	return func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		if token != nil {
			l, _ := idem.LeaseFrom(ctx)
			*token = l.Token
		}
		if _, ierr := insertBiz(biz, "x", "")(ctx, tx); ierr != nil {
			return idem.Response{}, ierr
		}
		return resp, err
	}
}

// assertNoBizRows fails t if an execution that must have rolled back (what
// it was) committed a business row.
func assertNoBizRows(t *testing.T, s *Store, biz, what string) {
	t.Helper()
	if got := bizRows(t, s, biz); len(got) != 0 {
		t.Fatalf("business write %s committed: %v", what, got)
	}
}

// assertRolledBack fails t unless the execution on key (what it was)
// committed no business row and released its lease.
func assertRolledBack(t *testing.T, s *Store, biz, key, what string) {
	t.Helper()
	assertNoBizRows(t, s, biz, what)
	if _, err := s.Get(context.Background(), key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("lease not released %s: %v", what, err)
	}
}

// insertBiz is a TxFunc that writes one business row with the lease's token.
func insertBiz(biz, id string, body string) TxFunc {
	return func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		l, ok := idem.LeaseFrom(ctx)
		if !ok {
			return idem.Response{}, errors.New("no lease in ctx")
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+biz+" (id, token) VALUES ($1, $2)", id, int64(l.Token)); err != nil {
			return idem.Response{}, err
		}
		return resp(body), nil
	}
}

func TestDoTxCommitsBusinessWriteWithCompletion(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()

	res, err := s.DoTx(ctx, "k", fp("a"), TxOptions{}, insertBiz(biz, "order-1", "created"))
	if err != nil {
		t.Fatal(err)
	}
	want := resp("created")
	if res.Replayed || res.Failed || !res.Response.Equal(&want) || res.Token == 0 {
		t.Fatalf("first DoTx = %+v", res)
	}
	if got := bizRows(t, s, biz); len(got) != 1 || got["order-1"] != int64(res.Token) {
		t.Fatalf("business rows = %v", got)
	}

	var calls atomic.Int32
	again := func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		calls.Add(1)
		return resp("second"), nil
	}
	res2, err := s.DoTx(ctx, "k", fp("a"), TxOptions{}, again)
	if err != nil || !res2.Replayed || !res2.Response.Equal(&want) || calls.Load() != 0 {
		t.Fatalf("replay = %+v, %v (fn ran %d times)", res2, err, calls.Load())
	}
	if _, err := s.DoTx(ctx, "k", fp("b"), TxOptions{}, again); !errors.Is(err, idem.ErrFingerprintMismatch) {
		t.Fatalf("other fingerprint: %v, want ErrFingerprintMismatch", err)
	}
	mustAcquire(t, s, "busy", fp("a"), time.Minute)
	if _, err := s.DoTx(ctx, "busy", fp("a"), TxOptions{}, again); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("live lease: %v, want ErrInProgress", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("fn ran %d times", calls.Load())
	}
}

// TestDoTxStaleHolderRollsBack: holder A writes its business row and stalls
// past its lease; B takes over and completes; A's transaction must not
// commit, so only B's business row exists.
func TestDoTxStaleHolderRollsBack(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()
	const ttl = 100 * time.Millisecond

	aWrote := make(chan struct{})
	bDone := make(chan struct{})
	type outcome struct {
		res idem.Result
		err error
	}
	aOut := make(chan outcome, 1)
	var aToken idem.Token
	go func() {
		res, err := s.DoTx(ctx, "pay", fp("a"), TxOptions{LeaseTTL: ttl, HeartbeatInterval: -1},
			func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
				l, _ := idem.LeaseFrom(ctx)
				aToken = l.Token
				r, err := insertBiz(biz, "charge-A", "A")(ctx, tx)
				close(aWrote)
				<-bDone // the "GC pause": B takes over and finishes meanwhile
				return r, err
			})
		aOut <- outcome{res, err}
	}()

	<-aWrote
	time.Sleep(2 * ttl)
	resB, err := s.DoTx(ctx, "pay", fp("a"), TxOptions{LeaseTTL: time.Minute}, insertBiz(biz, "charge-B", "B"))
	close(bDone)
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if resB.Replayed || resB.Token <= aToken {
		t.Fatalf("B did not take over from token %d: %+v", aToken, resB)
	}

	a := <-aOut
	if !errors.Is(a.err, idem.ErrLeaseLost) {
		t.Fatalf("stale holder A: %+v, %v; want ErrLeaseLost", a.res, a.err)
	}
	got := bizRows(t, s, biz)
	if _, ok := got["charge-A"]; ok || len(got) != 1 || got["charge-B"] != int64(resB.Token) {
		t.Fatalf("business rows = %v, want only charge-B with token %d", got, resB.Token)
	}
	rec, err := s.Get(ctx, "pay")
	wantB := resp("B")
	if err != nil || rec.Token != resB.Token || !rec.Response.Equal(&wantB) {
		t.Fatalf("record = %+v, %v; want B's completion", rec, err)
	}
}

func TestDoTxRetryableErrorReleasesAndRollsBack(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()
	boom := errors.New("downstream timeout")
	var first idem.Token
	_, err := s.DoTx(ctx, "k", fp("a"), TxOptions{}, failAfterInsert(biz, &first, idem.Response{}, boom))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want fn's error", err)
	}
	assertRolledBack(t, s, biz, "k", "of a failed execution")
	res, err := s.DoTx(ctx, "k", fp("a"), TxOptions{}, insertBiz(biz, "x", "ok"))
	if err != nil || res.Token <= first || res.Replayed {
		t.Fatalf("retry = %+v, %v", res, err)
	}
}

func TestDoTxPermanentErrorIsStoredAndReplayed(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()
	declined := errors.New("card declined")
	failResp := idem.Response{Status: 402, Body: []byte("declined")}
	opts := TxOptions{} // the default classifier: idem.IsPermanent
	res, err := s.DoTx(ctx, "k", fp("a"), opts, failAfterInsert(biz, nil, failResp, idem.Permanent(declined)))
	if !errors.Is(err, declined) || !res.Failed || !res.Response.Equal(&failResp) || res.Replayed {
		t.Fatalf("DoTx = %+v, %v", res, err)
	}
	assertNoBizRows(t, s, biz, "of a failed execution")
	res, err = s.DoTx(ctx, "k", fp("a"), opts, insertBiz(biz, "x", "ok"))
	if err != nil || !res.Replayed || !res.Failed || !res.Response.Equal(&failResp) {
		t.Fatalf("replay = %+v, %v", res, err)
	}
}

func TestDoTxPanicRollsBackAndReleases(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the panic of fn", p)
			}
		}()
		_, _ = s.DoTx(ctx, "k", fp("a"), TxOptions{}, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
			_, _ = insertBiz(biz, "x", "")(ctx, tx)
			panic("boom")
		})
	}()
	assertRolledBack(t, s, biz, "k", "after a panic")
}

func TestDoTxHeartbeatKeepsLeaseAndDetectsLoss(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()
	// Long enough that a heartbeat every ttl/3 is not missed on a loaded
	// machine (150ms was, under CI with other work).
	const ttl = 600 * time.Millisecond

	// A slow but healthy execution is not taken over.
	res, err := s.DoTx(ctx, "slow", fp("a"), TxOptions{LeaseTTL: ttl}, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		for range 4 {
			time.Sleep(ttl / 2)
			if l, rec, err := s.Acquire(ctx, "slow", fp("a"), time.Minute); err != nil || l != nil || !rec.LeaseLive(time.Now()) {
				t.Errorf("during a heartbeating execution Acquire got %v, %+v, %v", l, rec, err)
			}
		}
		return insertBiz(biz, "slow", "ok")(ctx, tx)
	})
	if err != nil || res.Failed {
		t.Fatalf("slow DoTx = %+v, %v", res, err)
	}

	// A lease superseded behind the holder's back cancels its context.
	_, err = s.DoTx(ctx, "lost", fp("a"), TxOptions{LeaseTTL: ttl}, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		if _, err := insertBiz(biz, "lost", "")(ctx, tx); err != nil {
			return idem.Response{}, err
		}
		if _, err := s.pool.Exec(context.Background(),
			"UPDATE "+s.table+" SET token = nextval('"+s.seq+"'::regclass) WHERE key = 'lost'"); err != nil {
			return idem.Response{}, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			return idem.Response{}, errors.New("lease loss not detected within 10s")
		}
		if cause := context.Cause(ctx); !errors.Is(cause, idem.ErrLeaseLost) {
			t.Errorf("context cause = %v, want ErrLeaseLost", cause)
		}
		return idem.Response{}, ctx.Err()
	})
	if !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("DoTx with a lost lease: %v, want ErrLeaseLost", err)
	}
	if got := bizRows(t, s, biz); len(got) != 1 {
		t.Fatalf("business rows = %v, want only the slow one", got)
	}
}

func TestDoTxResponseTooLargeIsStoredAsFailure(t *testing.T) {
	s, biz := newBizStore(t)
	ctx := context.Background()
	big := func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		if _, err := insertBiz(biz, "x", "")(ctx, tx); err != nil {
			return idem.Response{}, err
		}
		return idem.Response{Status: 200, Body: []byte(strings.Repeat("x", 11))}, nil
	}
	res, err := s.DoTx(ctx, "k", fp("a"), TxOptions{MaxResponseSize: 10}, big)
	if !errors.Is(err, idem.ErrResponseTooLarge) || !res.Failed {
		t.Fatalf("DoTx = %+v, %v; want a failure with ErrResponseTooLarge", res, err)
	}
	assertNoBizRows(t, s, biz, "with an oversized response")
	rec, err := s.Get(ctx, "k")
	if err != nil || rec.Status != idem.StatusFailed || rec.Response.Status != 500 {
		t.Fatalf("record = %+v, %v; want a stored 500 failure", rec, err)
	}
}

func TestDoTxSerializableIsolation(t *testing.T) {
	s, biz := newBizStore(t)
	res, err := s.DoTx(context.Background(), "k", fp("a"),
		TxOptions{Tx: pgx.TxOptions{IsoLevel: pgx.Serializable}}, insertBiz(biz, "x", "ok"))
	if err != nil || res.Failed {
		t.Fatalf("DoTx at SERIALIZABLE = %+v, %v", res, err)
	}
}
