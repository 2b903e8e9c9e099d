package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// corruptRows are planted corruptions: in-progress rows among them, which
// Stats used to count as in progress (issue #23 item 7: a row must count as
// corrupt exactly when Get returns ErrCorruptRecord).
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
	{"completed, policy id with a space", true, `fp_policy = 'pay v1'`},
}

// TestCorruptAdmin runs the suite's corrupt-record cases (Stats,
// ListCorrupt, GetCorrupt, PurgeCorrupt) on rows broken by corruptRows.
func TestCorruptAdmin(t *testing.T) {
	storetest.CorruptAdmin(t, storetest.CorruptAdminConfig{
		New: func(t *testing.T) idem.Store { return newStore(t, Options{}) },
		Plant: func(t *testing.T, st idem.Store) []string {
			s := st.(*Store)
			var keys []string
			for i, c := range corruptRows {
				key := fmt.Sprintf("corrupt-%d", i)
				l := mustAcquire(t, s, key, fp("a"), time.Minute)
				if c.complete {
					if err := s.Complete(t.Context(), l, resp("ok"), time.Hour); err != nil {
						t.Fatal(err)
					}
				}
				corrupt(t, s, key, c.set)
				keys = append(keys, key)
			}
			return keys
		},
		Listed: func(t *testing.T, i int, r *idem.CorruptRecord) {
			if r.Type != "row" || len(r.Digest) != 64 || len(r.Fields) != 10 {
				t.Errorf("%s (%s): %+v", r.Key, corruptRows[i].name, r)
			}
		},
		Damage: func(t *testing.T, st idem.Store, key string, version int) {
			corrupt(t, st.(*Store), key, []string{`token = 0`, `fingerprint = '\x01'`}[version])
		},
	})
}
