//go:build linux

package servers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/backends/pgstore"
)

// pgCase is one replicated PostgreSQL configuration and its expected outcome
// under an aimed failover.
type pgCase struct {
	name     string
	opts     PostgresReplicatedOptions
	wantLost bool
	ci       bool // run by TestPostgresFailover (the rest only as trials)
}

var pgCases = []pgCase{
	{"async, direct link", PostgresReplicatedOptions{}, false, false},
	// The kill must come within the lag of the completion for it to be
	// lost; on a loaded CI machine 200ms was sometimes too short, so the
	// async case lags by a second (it waits for no acknowledgement, so
	// only WaitCaughtUp pays for it).
	{"async, 1s lag", PostgresReplicatedOptions{ReplicationLag: time.Second}, true, true},
	{"synchronous_commit on, 200ms lag", PostgresReplicatedOptions{SynchronousCommit: "on", ReplicationLag: 200 * time.Millisecond}, false, true},
	{"synchronous_commit remote_apply, 200ms lag", PostgresReplicatedOptions{SynchronousCommit: "remote_apply", ReplicationLag: 200 * time.Millisecond}, false, false},
}

// pgTrial runs one trial of c on a fresh topology, which it stops and
// checks for leftovers. check, when set, sees the store before the trial.
func pgTrial(t *testing.T, c pgCase, key string, check func(*pgstore.Store)) outcome {
	t.Helper()
	ctx := testContext(t)
	topo := start(ctx, t, StartPostgresReplicated, c.opts)
	pool, err := pgxpool.New(ctx, topo.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := topo.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if check != nil {
		check(store)
	}
	o := runTrial(ctx, store, topo, key)
	checkWindow(t, o, key)
	if _, err := topo.Failover(ctx, key); err != ErrNoReplica {
		t.Errorf("second Failover = %v, want ErrNoReplica", err)
	}
	pool.Close()
	primary, standby, dir := topo.Primary(), topo.Standby(), topo.Dir()
	if err := topo.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pg := range []*Postgres{primary, standby} {
		assertGone(t, pg.PID(), pg.Port(), pg.Dir(), "")
	}
	assertGone(t, standby.PID(), standby.Port(), dir, dir)
	if topo.proxy != nil {
		assertPortFree(t, topo.proxy.Port())
	}
	return o
}

func TestPostgresFailover(t *testing.T) {
	needPostgres(t)
	failoverCases(t, pgCases, func(c pgCase) string { return c.name }, func(t *testing.T, c pgCase, key string) {
		if !c.ci {
			t.Skip("measured by TestFailoverTrialsPostgres")
		}
		o := pgTrial(t, c, key, func(s *pgstore.Store) {
			r, err := s.CheckReplication(t.Context())
			t.Logf("CheckReplication: %+v, %v", r, err)
			if want := c.opts.SynchronousCommit != ""; r.Synchronous() != want || (err == nil) != want {
				t.Errorf("CheckReplication = %+v, %v; want synchronous %v", r, err, want)
			}
			if c.opts.SynchronousCommit == "" && !errors.Is(err, pgstore.ErrAsyncReplication) {
				t.Errorf("CheckReplication on an async standby = %v, want ErrAsyncReplication", err)
			}
		})
		checkOutcome(t, o, "the promoted standby")
		if o.lost != c.wantLost {
			t.Errorf("completion lost = %v (record %s), want %v", o.lost, o.status, c.wantLost)
		}
	})
}

func TestFailoverTrialsPostgres(t *testing.T) {
	needPostgres(t)
	reportTrials(t, "postgres", pgCases, func(c pgCase) string { return c.name }, func(t *testing.T, c pgCase, key string) outcome { return pgTrial(t, c, key, nil) })
}

// TestPostgresStepFailover takes a failover in two steps: between them a
// write fails at once (the primary is dead, the standby read-only) and
// the standby is still in recovery; after Promote it takes the write.
func TestPostgresStepFailover(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	ctx := testContext(t)
	topo := start(ctx, t, StartPostgresReplicated, PostgresReplicatedOptions{SynchronousCommit: "on"})
	if _, err := topo.Promote(ctx); err == nil {
		t.Fatal("Promote before KillPrimary succeeded")
	}
	pool, err := pgxpool.New(ctx, topo.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE steps (v text)"); err != nil {
		t.Fatal(err)
	}
	label, err := topo.KillPrimary()
	if err != nil || label != "kill primary "+topo.Primary().Addr() {
		t.Fatalf("KillPrimary = %q, %v", label, err)
	}
	if _, err := topo.KillPrimary(); err != ErrNoReplica {
		t.Fatalf("second KillPrimary = %v, want ErrNoReplica", err)
	}
	if _, err := topo.Failover(ctx, "k"); err != ErrNoReplica {
		t.Fatalf("Failover between the steps = %v, want ErrNoReplica", err)
	}
	start := time.Now()
	if _, err := pool.Exec(ctx, "INSERT INTO steps VALUES ('between')"); err == nil {
		t.Fatal("a write between KillPrimary and Promote succeeded")
	} else if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the write between the steps failed after %v, want at once (%v)", took, err)
	}
	label, err = topo.Promote(ctx)
	if err != nil || label != "promoted "+topo.Standby().Addr() {
		t.Fatalf("Promote = %q, %v", label, err)
	}
	if _, err := topo.Promote(ctx); err == nil {
		t.Fatal("second Promote succeeded")
	}
	var n int
	if err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if _, err := pool.Exec(ctx, "INSERT INTO steps VALUES ('after')"); err != nil {
			return false, nil
		}
		return true, pool.QueryRow(ctx, "SELECT count(*) FROM steps").Scan(&n)
	}); err != nil || n != 1 {
		t.Fatalf("write after Promote: %d rows, %v", n, err)
	}
}
