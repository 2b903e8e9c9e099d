package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

// TestCheckConfig: the server's durable default passes; a pool whose
// sessions run with synchronous_commit off is refused with
// ErrAsyncCommit and idem.ErrUnsafeConfig.
func TestCheckConfig(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	if err := s.CheckConfig(ctx); err != nil {
		t.Fatalf("CheckConfig on the default server: %v", err)
	}
	off := newStoreWithSetting(t, "synchronous_commit", "off")
	err := off.CheckConfig(ctx)
	if !errors.Is(err, ErrAsyncCommit) || !errors.Is(err, idem.ErrUnsafeConfig) {
		t.Fatalf("CheckConfig with synchronous_commit off: %v, want ErrAsyncCommit and idem.ErrUnsafeConfig", err)
	}
}

// newStoreWithSetting is newStore on a pool whose sessions set name to
// value (a connection run-time parameter), without a table: CheckConfig
// needs none.
func newStoreWithSetting(t *testing.T, name, value string) *Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams[name] = value
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(pool, Options{Table: uniqueTable(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
