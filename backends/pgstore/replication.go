package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Errors of CheckReplication.
var (
	// ErrAsyncReplication means a commit on this server is acknowledged
	// before any standby has it: synchronous_standby_names is empty, or
	// synchronous_commit is off or local for the store's sessions. A
	// failover to a standby may then lose acknowledged claims and
	// completions (a completed request runs again). A server with no
	// standby at all reports it too: with nothing to fail over to, it is
	// the caller's to ignore.
	ErrAsyncReplication = errors.New("pgstore: replication is asynchronous")
	// ErrNoSyncStandby means commits wait for a synchronous standby, but
	// none is attached in sync or quorum state: every write blocks until one
	// is (or, with synchronous_commit local for a session, does not wait).
	ErrNoSyncStandby = errors.New("pgstore: no synchronous standby attached")
	// ErrReplicationUnchecked means the role cannot read
	// pg_stat_replication's sync_state (it needs pg_monitor, or
	// pg_read_all_stats, or superuser): whether a synchronous standby is
	// attached must be checked another way.
	ErrReplicationUnchecked = errors.New("pgstore: could not read pg_stat_replication")
)

// Replication is what CheckReplication found on the server the store's
// pool writes to.
type Replication struct {
	// SynchronousStandbyNames is the server's synchronous_standby_names
	// ("" when replication is asynchronous).
	SynchronousStandbyNames string
	// SynchronousCommit is synchronous_commit in the store's sessions: on,
	// remote_apply and remote_write wait for the synchronous standbys
	// (remote_write only until the standby's operating system has the
	// WAL), local and off do not.
	SynchronousCommit string
	// Standbys lists the attached standbys (pg_stat_replication).
	Standbys []Standby
}

// Standby is one row of pg_stat_replication.
type Standby struct {
	Name      string // application_name
	State     string // streaming, catchup, ...
	SyncState string // sync, quorum, potential or async; "" when unreadable
}

// Synchronous reports whether a commit waits for a standby that is
// attached and acknowledging: synchronous_commit is on, remote_write or
// remote_apply, synchronous_standby_names is set, and a standby is in sync
// or quorum state.
func (r Replication) Synchronous() bool {
	return r.check() == nil
}

func (r Replication) check() error {
	switch {
	case strings.TrimSpace(r.SynchronousStandbyNames) == "":
		return fmt.Errorf("%w: synchronous_standby_names is empty", ErrAsyncReplication)
	case r.SynchronousCommit == "off" || r.SynchronousCommit == "local":
		return fmt.Errorf("%w: synchronous_commit is %s", ErrAsyncReplication, r.SynchronousCommit)
	}
	unreadable := false
	for _, s := range r.Standbys {
		switch s.SyncState {
		case "sync", "quorum":
			return nil
		case "":
			unreadable = true
		}
	}
	if unreadable {
		return fmt.Errorf("%w: sync_state is hidden from this role", ErrReplicationUnchecked)
	}
	return fmt.Errorf("%w: synchronous_standby_names is %q, attached: %v", ErrNoSyncStandby, r.SynchronousStandbyNames, r.Standbys)
}

// CheckReplication reads synchronous_standby_names, synchronous_commit (as
// the store's sessions see it, so a per-role or per-database setting
// counts) and pg_stat_replication on the server the pool writes to, and
// reports whether an acknowledged write survives a failover to a standby.
//
// It returns the findings and nil when commits wait for an attached
// synchronous standby; an error wrapping ErrAsyncReplication when they do
// not wait for any; ErrNoSyncStandby when they would wait but no standby
// is in sync or quorum state; ErrReplicationUnchecked when the role cannot
// see sync_state; or an idem.ErrBackend error when the server cannot be
// queried. Like redisstore's CheckConfig, it is meant for start-up and
// health checks, not for every request.
func (s *Store) CheckReplication(ctx context.Context) (Replication, error) {
	var r Replication
	err := s.pool.QueryRow(ctx,
		"SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')").
		Scan(&r.SynchronousStandbyNames, &r.SynchronousCommit)
	if err != nil {
		return r, backendError("check replication", err, false)
	}
	rows, err := s.pool.Query(ctx,
		"SELECT coalesce(application_name, ''), coalesce(state, ''), coalesce(sync_state, '') FROM pg_stat_replication ORDER BY 1")
	if err != nil {
		return r, backendError("check replication", err, false)
	}
	defer rows.Close()
	for rows.Next() {
		var sb Standby
		if err := rows.Scan(&sb.Name, &sb.State, &sb.SyncState); err != nil {
			return r, backendError("check replication", err, false)
		}
		r.Standbys = append(r.Standbys, sb)
	}
	if err := rows.Err(); err != nil {
		return r, backendError("check replication", err, false)
	}
	return r, r.check()
}
