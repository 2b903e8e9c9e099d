package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"pgregory.net/rapid"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// plantColumns are the columns a planted change may set, each with the SQL
// values it may take: out-of-range numbers, values around the row's own,
// NULLs, infinities, junk bytes, and valid values of every column, so that
// some changes leave a valid row in another state (an expired lease, a
// higher token) for the store to handle normally.
var plantColumns = []struct {
	name   string
	values []string
}{
	{"status", []string{`'in_progress'`, `'completed'`, `'failed'`, `'uncertain'`, `'released'`, `'bogus'`, `''`, `'IN_PROGRESS'`}},
	{"fingerprint", []string{`'\x'`, `'\x01'`, `substring(fingerprint from 2)`, `fingerprint || '\x00'`,
		hexBytes(fp("a").String()), hexBytes(fp("b").String())}},
	{"token", []string{`0`, `-1`, `1`, `token - 1`, `token + 1`, `9000000000000000000`, `9223372036854775807`, `-9223372036854775808`}},
	{"prev_token", []string{`0`, `-1`, `token`, `token - 1`, `token + 1`, `9000000000000000000`}},
	{"lease_expires_at", []string{`NULL`, `statement_timestamp() - interval '1 minute'`, `statement_timestamp() + interval '1 hour'`, `'infinity'`, `'-infinity'`}},
	{"response", []string{`NULL`, `'\x'`, `'\xdeadbeef'`, `substring(response from 1 for 3)`,
		hexBytes(fmt.Sprintf("%x", idem.EncodeResponse(&idem.Response{Status: 201, Body: []byte("planted")})))}},
	{"expires_at", []string{`statement_timestamp() - interval '1 minute'`, `statement_timestamp() + interval '1 hour'`, `'infinity'`}},
	{"fp_policy", []string{`NULL`, `''`, `'payments/v2'`, `'pay ments'`, `'é'`, `repeat('p', 129)`, `repeat('p', 128)`}},
}

// hexBytes is the bytea literal of a hex string.
func hexBytes(h string) string { return `'\x` + h + `'` }

// plantRow changes key's row at random with pick: one to three columns set
// to a value of plantColumns. It returns what it did.
func plantRow(ctx context.Context, s *Store, key string, pick storetest.Chooser) (string, error) {
	var sets []string
	for range 1 + pick("changes", 3) {
		c := plantColumns[pick("column", len(plantColumns))]
		sets = append(sets, c.name+" = "+c.values[pick("value", len(c.values))])
	}
	for i, set := range sets { // one by one: a later change sees the earlier
		_, err := s.pool.Exec(ctx, "UPDATE "+s.table+" SET "+set+" WHERE key = $1", key)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "22003": // token + 1 on MaxInt64
			sets[i] += " (out of range: not applied)"
		case err != nil:
			return "", fmt.Errorf("plant %s: %w", set, err)
		}
	}
	return strings.Join(sets, ", "), nil
}

// lastValue is the token sequence's current value.
func lastValue(t interface{ Fatalf(string, ...any) }, s *Store) int64 {
	var n int64
	if err := s.pool.QueryRow(context.Background(), "SELECT last_value FROM "+s.seq).Scan(&n); err != nil {
		t.Fatalf("sequence: %v", err)
	}
	return n
}

// TestPlantedRecords is the fail-closed property on PostgreSQL: a row
// created through the store (in progress, completed or failed), changed by
// plantRow, then held to storetest.Planted, with two more checks across
// runs: the token sequence never goes back, and every claim of a fresh key
// gets a token above every token issued before. The run count is rapid's
// (-rapid.checks, 100 by default); pgregory.net/rapid shrinks a failing
// case to the fewest, simplest column changes.
func TestPlantedRecords(t *testing.T) {
	s := newStore(t, Options{})
	run := 0
	var issued idem.Token
	plant := func(ctx context.Context, key string, draw func(string, int) int) (string, error) {
		return plantRow(ctx, s, key, draw)
	}
	rapid.Check(t, func(rt *rapid.T) {
		run++
		draw := func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) }
		issued = storetest.PlantedRun(rt, s, fmt.Sprintf("planted-%d", run), fp("a"), issued, draw, plant,
			func(t storetest.TB) uint64 { return uint64(lastValue(t, s)) })
	})
	t.Logf("%d planted records", run)
}
