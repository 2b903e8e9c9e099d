package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

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
