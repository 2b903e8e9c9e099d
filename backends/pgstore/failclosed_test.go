package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// rowText returns key's row as text, to tell whether a call changed it.
func rowText(t *testing.T, s *Store, key string) string {
	t.Helper()
	var text string
	if err := s.pool.QueryRow(context.Background(), "SELECT r::text FROM "+s.table+" r WHERE key = $1", key).Scan(&text); err != nil {
		t.Fatalf("row of %q: %v", key, err)
	}
	return text
}

// TestTakeOverRefusesCorruptRows plants in-progress rows that a take-over
// would claim (same fingerprint, lease expired) but that row.record
// rejects. Before the statements judged rows as Go does, an in-progress row
// carrying a response was taken over and executed. Each must now fail
// closed: Acquire returns ErrCorruptRecord and claims nothing, and the
// fenced writes refuse to overwrite the row, with the row's own token too.
func TestTakeOverRefusesCorruptRows(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	expired := `lease_expires_at = statement_timestamp() - interval '1 second'`
	tests := []struct{ name, set string }{
		{"in progress with response", `response = '\x0102'`},
		{"in progress with a valid response", `response = '` + fmt.Sprintf("\\x%x", idem.EncodeResponse(&idem.Response{Status: 200})) + `'`},
		{"negative previous token", `prev_token = -1`},
		{"previous token above token", `prev_token = token + 1`},
		{"zero token", `token = 0`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("failclosed-%d", i)
			l := mustAcquire(t, s, key, fp("a"), time.Minute)
			corrupt(t, s, key, expired+", "+tt.set)
			before := rowText(t, s, key)
			got, rec, err := s.Acquire(ctx, key, fp("a"), time.Minute)
			if !errors.Is(err, idem.ErrCorruptRecord) || got != nil || rec != nil {
				t.Errorf("Acquire = %+v, %+v, %v; want only ErrCorruptRecord", got, rec, err)
			}
			for name, err := range map[string]error{
				"Heartbeat": s.Heartbeat(ctx, l, time.Minute),
				"Complete":  s.Complete(ctx, l, resp("x"), time.Hour),
				"Release":   s.Release(ctx, l),
			} {
				if !errors.Is(err, idem.ErrCorruptRecord) {
					t.Errorf("%s with the row's token = %v, want ErrCorruptRecord", name, err)
				}
			}
			if after := rowText(t, s, key); after != before {
				t.Errorf("row changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestTakeOverNeverIssuesALowerToken plants a valid in-progress row whose
// token is far above the sequence (as after a sequence reset, or a restore
// of the table from a newer copy than the sequence). Before, the take-over
// claimed it with the sequence's next value, a token below the one it
// replaced (token 18 over 9e18). Now Acquire fails closed with
// ErrCounterBehind, the row stays as it was, and once the sequence is moved
// past the stored tokens the take-over issues a higher token. The same
// holds for a released row (a fresh claim must also go above it).
func TestTakeOverNeverIssuesALowerToken(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	const big = 9_000_000_000_000_000_000
	for _, tt := range []struct{ name, key, set string }{
		{"expired lease", "expired", `lease_expires_at = statement_timestamp() - interval '1 second'`},
		{"released", "released", `status = 'released', lease_expires_at = NULL, expires_at = statement_timestamp()`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := "behind-" + tt.key
			mustAcquire(t, s, key, fp("a"), time.Minute)
			corrupt(t, s, key, fmt.Sprintf("token = %d, %s", big, tt.set))
			before := rowText(t, s, key)
			l, rec, err := s.Acquire(ctx, key, fp("a"), time.Minute)
			if !errors.Is(err, ErrCounterBehind) || !errors.Is(err, idem.ErrCorruptRecord) || l != nil || rec != nil {
				t.Fatalf("Acquire = %+v, %+v, %v; want ErrCounterBehind", l, rec, err)
			}
			if after := rowText(t, s, key); after != before {
				t.Fatalf("row changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// Batch claims fail the same way.
	res := s.AcquireBatch(ctx, []idem.AcquireRequest{{Key: "behind-expired", Fingerprint: fp("a")}}, time.Minute)
	if !errors.Is(res[0].Err, ErrCounterBehind) || res[0].Lease != nil {
		t.Fatalf("AcquireBatch = %+v; want ErrCounterBehind", res[0])
	}
	// The operator's fix from ErrCounterBehind's doc: the take-over then
	// goes above the stored token.
	if _, err := s.pool.Exec(ctx, fmt.Sprintf("SELECT setval('%s', (SELECT max(token) FROM %s))", s.seq, s.table)); err != nil {
		t.Fatal(err)
	}
	l, _, err := s.Acquire(ctx, "behind-expired", fp("a"), time.Minute)
	if err != nil || l == nil || l.Token <= big || l.PrevToken != big {
		t.Fatalf("take-over after setval = %+v, %v; want a token above %d", l, err, big)
	}
	l, _, err = s.Acquire(ctx, "behind-released", fp("a"), time.Minute)
	if err != nil || l == nil || l.Token <= big || l.PrevToken != 0 {
		t.Fatalf("claim after setval = %+v, %v; want a token above %d", l, err, big)
	}
}

// corrupt overwrites key's row with set (an SQL SET list), bypassing the
// store.
func corrupt(t *testing.T, s *Store, key, set string) {
	t.Helper()
	tag, err := s.pool.Exec(context.Background(), "UPDATE "+s.table+" SET "+set+" WHERE key = $1", key)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("corrupt %q with %q: %v (%d rows)", key, set, err, tag.RowsAffected())
	}
}

func TestCorruptRecords(t *testing.T) {
	tests := []struct {
		name     string
		complete bool // complete the record before corrupting it
		set      string
	}{
		{"unknown status", false, `status = 'bogus'`},
		{"empty status", true, `status = ''`},
		{"short fingerprint", false, `fingerprint = '\x0102'`},
		{"zero token", false, `token = 0`},
		{"negative token", true, `token = -5`},
		{"garbage response", true, `response = '\xdeadbeef'`},
		{"truncated response", true, `response = substring(response from 1 for 3)`},
		{"completed without response", true, `response = NULL`},
		{"in progress with response", true, `status = 'in_progress', lease_expires_at = clock_timestamp() + interval '1 hour'`},
		{"in progress without lease expiry", false, `lease_expires_at = NULL`},
		{"completed with lease expiry", true, `lease_expires_at = clock_timestamp()`},
		{"infinite expiry", true, `expires_at = 'infinity'`},
	}
	s := newStore(t, Options{})
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("corrupt-%d", i)
			l := mustAcquire(t, s, key, fp("a"), time.Minute)
			if tt.complete {
				if err := s.Complete(ctx, l, resp("ok"), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			corrupt(t, s, key, tt.set)
			if _, err := s.Get(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Get: %v, want ErrCorruptRecord", err)
			}
			for _, f := range []idem.Fingerprint{fp("a"), fp("b")} {
				l, rec, err := s.Acquire(ctx, key, f, time.Minute)
				if !errors.Is(err, idem.ErrCorruptRecord) || l != nil || rec != nil {
					t.Errorf("Acquire: %v, %v, %v; want only ErrCorruptRecord", l, rec, err)
				}
			}
		})
	}
}
