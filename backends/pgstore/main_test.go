package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

func TestMain(m *testing.M) {
	// The engine's heartbeat scheduler (used by the benchmark and examples)
	// exits one tick after its last execution, not when the engine is
	// dropped; it is the engine's, not a leak of this package.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/idembench/idembench/idem.(*heartbeats).loop"))
}

// newPool connects to the test server and closes the pool at cleanup.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := testenv.PostgresURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.PostgresEnv, err)
	}
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// uniqueTable returns a table name no other test uses.
func uniqueTable(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "idem_test_" + hex.EncodeToString(b[:])
}

// newStore returns a migrated Store on its own table, dropped at cleanup.
// opts.Table is filled in when empty.
func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	return newStoreOn(t, newPool(t), opts)
}

// newStoreOn is newStore on pool.
func newStoreOn(t testing.TB, pool *pgxpool.Pool, opts Options) *Store {
	t.Helper()
	if opts.Table == "" {
		opts.Table = uniqueTable(t)
	}
	s, err := New(pool, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() { dropSchema(t, s) })
	return s
}

// dropSchema removes everything Migrate created for s.
func dropSchema(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, "DROP TABLE IF EXISTS "+s.table+", "+s.ledger+"; DROP SEQUENCE IF EXISTS "+s.seq)
	if err != nil {
		t.Errorf("drop schema of %s: %v", s.table, err)
	}
}

func fp(s string) idem.Fingerprint { return idem.FingerprintString(s) }

func resp(body string) idem.Response {
	return idem.Response{Status: 201, Header: map[string][]string{"Content-Type": {"text/plain"}}, Body: []byte(body)}
}

// mustAcquire and mustRecord are the suite's: they fail the test unless
// Acquire grants a lease, or returns the existing record, and nothing else.
var (
	mustAcquire = storetest.MustAcquire
	mustRecord  = storetest.MustRecord
)
