package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// TestBatchesCommitOnce shows that AcquireBatch and FinishBatch each run
// as one transaction (one commit for the whole batch, which is what makes
// coalescing pay on a commit-bound server): every row a batch wrote carries
// the same xmin, the id of the transaction that wrote its current version.
func TestBatchesCommitOnce(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	const n = 20
	reqs := make([]idem.AcquireRequest, n)
	keys := make([]string, n)
	for i := range reqs {
		keys[i] = fmt.Sprintf("commit-once-%02d", i)
		reqs[i] = idem.AcquireRequest{Key: keys[i], Fingerprint: idem.FingerprintString("f")}
	}
	xmins := func() map[string]bool {
		t.Helper()
		rows, err := s.pool.Query(ctx, `SELECT xmin::text FROM `+s.table+` WHERE key = ANY($1)`, keys)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got, count := map[string]bool{}, 0
		for rows.Next() {
			var x string
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			got[x] = true
			count++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if count != n {
			t.Fatalf("%d rows, want %d", count, n)
		}
		return got
	}
	fs := make([]idem.Finish, n)
	for i, r := range s.AcquireBatch(ctx, reqs, time.Minute) {
		if r.Err != nil || r.Lease == nil {
			t.Fatalf("claim %d: lease %v, err %v", i, r.Lease, r.Err)
		}
		fs[i] = idem.Finish{Kind: idem.FinishComplete, Lease: r.Lease, Response: idem.Response{Status: 200}}
	}
	claimed := xmins()
	if len(claimed) != 1 {
		t.Fatalf("AcquireBatch of %d keys wrote them in %d transactions, want 1", n, len(claimed))
	}
	for i, err := range s.FinishBatch(ctx, fs, time.Hour) {
		if err != nil {
			t.Fatalf("complete %d: %v", i, err)
		}
	}
	completed := xmins()
	if len(completed) != 1 {
		t.Fatalf("FinishBatch of %d writes made them in %d transactions, want 1", n, len(completed))
	}
	for x := range completed {
		if claimed[x] {
			t.Fatalf("FinishBatch's rows carry the claims' transaction id %s", x)
		}
	}
}
