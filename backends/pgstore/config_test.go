package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

func TestReplicationCheck(t *testing.T) {
	sync := []Standby{{Name: "a", State: "streaming", SyncState: "sync"}}
	tests := []struct {
		name string
		r    Replication
		want error
	}{
		{"lone server", Replication{SynchronousCommit: "on"}, ErrAsyncReplication},
		{"async standby", Replication{SynchronousCommit: "on", Standbys: []Standby{{"a", "streaming", "async"}}}, ErrAsyncReplication},
		{"sync standby", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "on", Standbys: sync}, nil},
		{"remote_apply", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "remote_apply", Standbys: sync}, nil},
		{"quorum", Replication{SynchronousStandbyNames: "ANY 1 (a, b)", SynchronousCommit: "on",
			Standbys: []Standby{{"a", "streaming", "quorum"}, {"b", "streaming", "quorum"}}}, nil},
		{"session commits locally", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "local", Standbys: sync}, ErrAsyncReplication},
		{"synchronous_commit off", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "off", Standbys: sync}, ErrAsyncReplication},
		{"named standby not attached", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "on"}, ErrNoSyncStandby},
		{"standby only potential", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "on",
			Standbys: []Standby{{"b", "streaming", "potential"}}}, ErrNoSyncStandby},
		{"sync_state hidden", Replication{SynchronousStandbyNames: "a", SynchronousCommit: "on",
			Standbys: []Standby{{"a", "", ""}}}, ErrReplicationUnchecked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.check()
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("check() = %v, want %v", err, tc.want)
			}
			if got := tc.r.Synchronous(); got != (tc.want == nil) {
				t.Errorf("Synchronous() = %v, want %v", got, tc.want == nil)
			}
		})
	}
}

// TestCheckReplicationLoneServer: the test server has no standby, so its
// commits are acknowledged by it alone.
func TestCheckReplicationLoneServer(t *testing.T) {
	s := newStore(t, Options{})
	r, err := s.CheckReplication(t.Context())
	if !errors.Is(err, ErrAsyncReplication) {
		t.Fatalf("CheckReplication = %+v, %v; want ErrAsyncReplication", r, err)
	}
	if r.SynchronousCommit == "" {
		t.Errorf("synchronous_commit not read: %+v", r)
	}
}

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
