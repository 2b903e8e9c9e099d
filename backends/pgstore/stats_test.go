package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/idem"
)

// corruptRows are planted corruptions: in-progress rows among them, which
// Stats used to count as in progress.
var corruptRows = []struct {
	name     string
	complete bool // complete the record before corrupting it
	set      string
}{
	{"in progress, zero token", false, `token = 0`},
	{"in progress, short fingerprint", false, `fingerprint = '\x0102'`},
	{"in progress, no lease expiry", false, `lease_expires_at = NULL`},
	{"in progress, infinite lease expiry", false, `lease_expires_at = 'infinity'`},
	{"in progress with response", true, `status = 'in_progress', lease_expires_at = clock_timestamp() + interval '1 hour'`},
	{"unknown status", false, `status = 'bogus'`},
	{"completed, garbage response", true, `response = '\xdeadbeef'`},
	{"completed, negative token", true, `token = -5`},
	{"completed, infinite expiry", true, `expires_at = 'infinity'`},
}

// plantCorrupt writes every corruptRows entry under corrupt-N, and a
// valid in-progress record (live) and a completed one (done) beside them.
// It returns the corrupt keys.
func plantCorrupt(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for i, c := range corruptRows {
		key := fmt.Sprintf("corrupt-%d", i)
		l := mustAcquire(t, s, key, fp("a"), time.Minute)
		if c.complete {
			if err := s.Complete(ctx, l, resp("ok"), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		corrupt(t, s, key, c.set)
		if _, err := s.Get(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("%s: Get: %v, want ErrCorruptRecord", c.name, err)
		}
		keys = append(keys, key)
	}
	mustAcquire(t, s, "live", fp("l"), time.Hour)
	l := mustAcquire(t, s, "done", fp("d"), time.Hour)
	if err := s.Complete(ctx, l, resp("ok"), time.Hour); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestStatsCountsCorruptRowsAsGetDoes is issue #23 item 7: Stats counted
// an in-progress row that Get cannot decode as in progress. A row must
// count as corrupt exactly when Get returns ErrCorruptRecord.
func TestStatsCountsCorruptRowsAsGetDoes(t *testing.T) {
	s := newStore(t, Options{})
	keys := plantCorrupt(t, s)
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Bytes = 0
	want := idem.StoreStats{InProgress: 1, Completed: 1, Corrupt: int64(len(keys))}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Fatalf("Stats (-want +got):\n%s", diff)
	}
}
