//go:build unix

package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/history"
)

// StandbyName is the application_name the standby of a PostgresReplicated
// connects with, and what synchronous_standby_names names.
const StandbyName = "standby"

// PostgresReplicatedOptions configures StartPostgresReplicated. The zero
// value is a primary with one asynchronous streaming standby, directly
// linked.
type PostgresReplicatedOptions struct {
	// SynchronousCommit empty (the zero value) leaves replication
	// asynchronous: synchronous_standby_names is empty and a commit returns
	// once it is flushed on the primary. "on", "remote_write" or
	// "remote_apply" sets synchronous_standby_names to StandbyName and
	// synchronous_commit to that level on the primary, once the standby
	// streams: a commit then also waits for the standby (to flush, to write,
	// or to apply and make it visible).
	SynchronousCommit string
	// ReplicationLag, when positive, routes the standby's WAL stream through
	// a proxy that holds every byte for that long and drops what it holds
	// when the primary dies (see the package doc).
	ReplicationLag time.Duration
	// BinDir and User are as in PostgresOptions.
	BinDir string
	User   string
}

// PostgresReplicated is a PostgreSQL primary and a streaming standby made
// with pg_basebackup, each a private server (StartPostgres) on a loopback
// port, in one temporary directory. Its methods are safe for concurrent
// use.
type PostgresReplicated struct {
	dir     string
	binDir  string
	primary *Postgres
	standby *Postgres
	proxy   *lagProxy

	stopGuard      // serializes Failover, its steps and Stop
	killed    bool // KillPrimary ran
	promoted  bool
}

var _ StepFailover = (*PostgresReplicated)(nil)

// StartPostgresReplicated starts a primary (StartPostgres), takes a base
// backup of it with pg_basebackup -R into the standby's directory, starts
// the standby streaming from the primary (or from the lag proxy in front of
// it) as StandbyName, and waits until the primary reports it streaming
// (and, when SynchronousCommit is set, as its synchronous standby). If ctx
// has no deadline, it gives up after two minutes. On error nothing is left
// running and the directory is removed.
func StartPostgresReplicated(ctx context.Context, opts PostgresReplicatedOptions) (*PostgresReplicated, error) {
	switch opts.SynchronousCommit {
	case "", "on", "remote_write", "remote_apply":
	default:
		return nil, fmt.Errorf("servers: synchronous_commit %q (want empty, on, remote_write or remote_apply)", opts.SynchronousCommit)
	}
	if opts.ReplicationLag < 0 {
		return nil, errors.New("servers: negative ReplicationLag")
	}
	binDir, err := findPostgres(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if _, err := postgresCredential(opts.User); err != nil {
		return nil, err
	}
	_ = SweepStale()
	dir, err := makeTempDir("pgrepl")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil { // the server's user must pass through
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("servers: chmod %s: %w", dir, err)
	}
	ctx, cancel := withStartTimeout(ctx, 2*pgStartTimeout)
	defer cancel()
	t := &PostgresReplicated{dir: dir, binDir: binDir}
	register(t)
	if err := t.start(ctx, opts); err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	return t, nil
}

func (t *PostgresReplicated) start(ctx context.Context, opts PostgresReplicatedOptions) error {
	pgOpts := PostgresOptions{Dir: filepath.Join(t.dir, "primary"), BinDir: t.binDir, User: opts.User}
	primary, err := StartPostgres(ctx, pgOpts)
	if err := t.keep(&t.primary, primary, err); err != nil {
		return err
	}
	port := primary.Port()
	if opts.ReplicationLag > 0 {
		p, err := startLagProxy(primary.Addr(), opts.ReplicationLag)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.proxy, port = p, p.Port()
		t.mu.Unlock()
	}
	standbyDir := filepath.Join(t.dir, "standby")
	if err := t.baseBackup(ctx, primary, standbyDir, port); err != nil {
		return err
	}
	pgOpts.Dir = standbyDir
	standby, err := StartPostgres(ctx, pgOpts)
	if err := t.keep(&t.standby, standby, err); err != nil {
		return err
	}
	if err := t.waitStandby(ctx, "streaming", ""); err != nil {
		return err
	}
	if opts.SynchronousCommit == "" {
		return nil
	}
	return t.makeSynchronous(ctx, opts.SynchronousCommit)
}

// keep stores a started server in *slot unless Stop ran meanwhile (then it
// stops it and returns ErrStopped) or start failed.
func (t *PostgresReplicated) keep(slot **Postgres, pg *Postgres, err error) error {
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return errors.Join(ErrStopped, pg.Stop())
	}
	*slot = pg
	return nil
}

// baseBackup runs pg_basebackup -R from primary into dir/data as the
// server's user and points the copy at port as StandbyName. The copy
// overrides synchronous_standby_names to empty, so a promoted standby never
// waits for a standby of its own, and sets wal_retrieve_retry_interval to
// walRetrieveRetry, so a promotion is not held up by a retry sleep.
func (t *PostgresReplicated) baseBackup(ctx context.Context, primary *Postgres, dir string, port int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("servers: standby dir: %w", err)
	}
	cred := primary.cred
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("servers: chown %s: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port()), "-U", Superuser,
		"-D", data, "-X", "stream", "-c", "fast", "-R", "--no-sync"}
	if err := runTool(ctx, filepath.Join(t.binDir, "pg_basebackup"), args, dir, "basebackup.log", cred); err != nil {
		return err
	}
	extra := fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=%s application_name=%s'\n"+
		"synchronous_standby_names = ''\n"+
		"wal_retrieve_retry_interval = '%dms'\n", port, Superuser, StandbyName, walRetrieveRetry.Milliseconds())
	f, err := os.OpenFile(filepath.Join(data, "postgresql.auto.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("servers: standby configuration: %w", err)
	}
	_, err = f.WriteString(extra)
	return errors.Join(err, f.Close())
}

// walRetrieveRetry is the standby's wal_retrieve_retry_interval: how long
// its startup process sleeps after the WAL stream failed before it tries
// again, and, measured on PostgreSQL 15, sometimes how long a promote
// request that arrives just then waits. At the default (5s) one Failover
// in about six took over 5 seconds instead of a few hundred milliseconds
// (the log shows "received promote request", then "waiting for WAL to
// become available", then "redo done" 5 s later).
const walRetrieveRetry = 100 * time.Millisecond

// runTool runs a PostgreSQL client program to completion, its output in
// dir/logName, and returns an error with the log's tail if it fails.
func runTool(ctx context.Context, bin string, args []string, dir, logName string, cred *syscall.Credential) error {
	p, err := startProc(bin, args, dir, filepath.Join(dir, logName), cred)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		_ = p.kill()
		return fmt.Errorf("servers: %s: %w", filepath.Base(bin), context.Cause(ctx))
	}
	if p.err != nil {
		return fmt.Errorf("servers: %s: %w; log: %s", filepath.Base(bin), p.err, p.logTail())
	}
	return nil
}

// waitStandby waits until the primary's pg_stat_replication shows
// StandbyName in state, and in syncState unless that is empty.
func (t *PostgresReplicated) waitStandby(ctx context.Context, state, syncState string) error {
	var got [2]string
	err := t.onPrimary(ctx, func(ctx context.Context, c *pgx.Conn) error {
		return poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
			err := c.QueryRow(ctx, "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1",
				StandbyName).Scan(&got[0], &got[1])
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return false, err
			}
			return got[0] == state && (syncState == "" || got[1] == syncState), nil
		})
	})
	if err != nil {
		return fmt.Errorf("servers: standby not %s %s (state %q, sync_state %q): %w", state, syncState, got[0], got[1], err)
	}
	return nil
}

// makeSynchronous names the standby in synchronous_standby_names, sets
// synchronous_commit, reloads, and waits until the standby is "sync".
func (t *PostgresReplicated) makeSynchronous(ctx context.Context, level string) error {
	err := t.onPrimary(ctx, func(ctx context.Context, c *pgx.Conn) error {
		for _, q := range []string{
			"ALTER SYSTEM SET synchronous_standby_names = " + quoteLiteral(StandbyName),
			"ALTER SYSTEM SET synchronous_commit = " + quoteLiteral(level),
			"SELECT pg_reload_conf()",
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("servers: make the standby synchronous: %w", err)
	}
	return t.waitStandby(ctx, "streaming", "sync")
}

func quoteLiteral(s string) string { return "'" + s + "'" }

// onPrimary runs f on a new connection to the primary.
func (t *PostgresReplicated) onPrimary(ctx context.Context, f func(ctx context.Context, c *pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, pgURL(t.primary.Port(), "postgres")+"&connect_timeout=2")
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return f(ctx, c)
}

// Primary returns the first primary (down after a Failover).
func (t *PostgresReplicated) Primary() *Postgres { return t.primary }

// Standby returns the standby (the primary after a Failover).
func (t *PostgresReplicated) Standby() *Postgres { return t.standby }

// Dir returns the directory holding both servers (primary/, standby/).
func (t *PostgresReplicated) Dir() string { return t.dir }

// URL returns a multi-host URL for database "test" that pgx follows across
// a failover: postgres://postgres@PRIMARY,STANDBY/test?sslmode=disable&
// target_session_attrs=read-write&connect_timeout=2. A new connection tries
// the hosts in order and keeps the first that accepts writes, so after
// Failover it lands on the promoted standby.
func (t *PostgresReplicated) URL() string {
	return "postgres://" + Superuser + "@" + t.primary.Addr() + "," + t.standby.Addr() + "/" + Database +
		"?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

// WaitCaughtUp waits until the standby has replayed everything the primary
// has written so far (replay_lsn reaches pg_current_wal_lsn()), for
// example after a migration, so that a later Failover loses only what
// follows.
func (t *PostgresReplicated) WaitCaughtUp(ctx context.Context) error {
	return t.onPrimary(ctx, func(ctx context.Context, c *pgx.Conn) error {
		var target string
		if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&target); err != nil {
			return err
		}
		return poll(ctx, 10*time.Millisecond, func(ctx context.Context) (bool, error) {
			var ok bool
			err := c.QueryRow(ctx, "SELECT coalesce(bool_or(replay_lsn >= $1::pg_lsn), false) FROM pg_stat_replication WHERE application_name = $2",
				target, StandbyName).Scan(&ok)
			return ok, err
		})
	})
}

// Failover kills the primary like a host failure (Postgres.Kill: SIGKILL to
// the postmaster and every backend), runs pg_ctl promote -w on the standby,
// and waits until it accepts writes (pg_is_in_recovery() is false). The
// old primary stays down. A second Failover returns ErrNoReplica; after
// Stop it returns ErrStopped. If ctx has no deadline, it gives up after 60
// seconds. See Topology.
func (t *PostgresReplicated) Failover(ctx context.Context, key string) (history.Op, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return failover(ctx, key, "postgres", t.killPrimaryLocked,
		func(ctx context.Context, _ *Postgres) (string, error) {
			t.promoted = true
			if err := t.promote(ctx); err != nil {
				return "", err
			}
			return t.standby.Addr(), nil
		})
}

// KillPrimary is the first step of a failover taken in two
// (StepFailover): it kills the primary like a host failure and returns at
// once; the standby stays in recovery, refusing writes, until Promote. A
// second KillPrimary returns ErrNoReplica; after Stop, ErrStopped.
func (t *PostgresReplicated) KillPrimary() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, err := t.killPrimaryLocked()
	if err != nil {
		return "", err
	}
	return "kill primary " + old.Addr(), nil
}

// killPrimaryLocked is the kill both kinds of failover start with, under
// t.mu: it refuses after Stop (ErrStopped) and once the primary was
// killed (ErrNoReplica), and otherwise kills the primary. It returns the
// primary it tried to kill (nil when refused).
func (t *PostgresReplicated) killPrimaryLocked() (*Postgres, error) {
	switch {
	case t.stopped:
		return nil, ErrStopped
	case t.promoted || t.killed:
		return nil, ErrNoReplica
	}
	if err := t.primary.Kill(); err != nil {
		return t.primary, err
	}
	t.killed = true
	return t.primary, nil
}

// Promote is the second step: it promotes the standby (pg_ctl promote)
// and waits until it is out of recovery. It needs a KillPrimary before
// it. If ctx has no deadline, it gives up after 60 seconds.
func (t *PostgresReplicated) Promote(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return "", ErrStopped
	}
	if !t.killed || t.promoted {
		return "", errors.New("servers: Promote without KillPrimary")
	}
	ctx, cancel := withStartTimeout(ctx, failoverTimeout)
	defer cancel()
	t.promoted = true
	if err := t.promote(ctx); err != nil {
		return "", err
	}
	return "promoted " + t.standby.Addr(), nil
}

// promote runs pg_ctl promote on the standby and waits until it is out of
// recovery.
func (t *PostgresReplicated) promote(ctx context.Context) error {
	s := t.standby
	args := []string{"promote", "-D", s.dataDir(), "-w", "-t", "60"}
	if err := runTool(ctx, filepath.Join(t.binDir, "pg_ctl"), args, s.dir, "promote.log", s.cred); err != nil {
		return err
	}
	return poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, err := pgx.Connect(ctx, s.URL()+"&connect_timeout=2")
		if err != nil {
			return false, nil
		}
		defer c.Close(context.Background())
		var recovering bool
		if err := c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil {
			return false, nil
		}
		return !recovering, nil
	})
}

// Stop stops the lag proxy and both servers and removes the directory. It
// is idempotent.
func (t *PostgresReplicated) Stop() error {
	return t.stopOnce(t, func() error {
		var err error
		if t.proxy != nil {
			err = t.proxy.Close()
		}
		var servers []*Postgres
		for _, pg := range []*Postgres{t.standby, t.primary} {
			if pg != nil {
				servers = append(servers, pg)
			}
		}
		err = errors.Join(err, stopAll(servers))
		if rerr := os.RemoveAll(t.dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("servers: remove %s: %w", t.dir, rerr))
		}
		return err
	})
}
