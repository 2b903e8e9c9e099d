package pgstore

import (
	"context"
	"time"
)

// leaseState is what WaitChange watches: whether key holds a live lease,
// and which.
type leaseState struct {
	now         time.Time  // server clock
	token       *int64     // nil: absent
	status      *string    // nil: absent
	leaseExpiry *time.Time // nil: not in progress
}

// live reports whether the state is an in-progress record whose lease has
// not expired at the server's now.
func (st *leaseState) live() bool {
	return st.status != nil && *st.status == "in_progress" &&
		st.leaseExpiry != nil && st.now.Before(*st.leaseExpiry)
}

func (s *Store) peek(ctx context.Context, key string) (leaseState, error) {
	var st leaseState
	err := s.queryRow(ctx, "wait", false, s.sql.peek, []any{key},
		&st.now, &st.token, &st.status, &st.leaseExpiry)
	return st, err
}

// WaitChange blocks until key no longer holds the live lease it holds when
// WaitChange starts: the record was completed, failed, released or deleted,
// or its lease expired (a take-over is then possible), or another lease
// replaced it. It returns nil at once when key holds no live lease, and
// ctx.Err() when ctx ends first. Other errors are backend errors.
//
// It polls: one indexed read at once, then one every Options.PollInterval
// (default 50ms) or when the lease is due to expire, whichever is sooner,
// measured on the server clock. A heartbeat that extends the lease is not a
// change. Because every wake-up re-reads the row, no change can be missed;
// a change that is undone within one interval may be. Polling was chosen over
// LISTEN/NOTIFY so that completions stay free of pg_notify, which serialises
// committing transactions database-wide, and so that waiters need no
// dedicated connection.
func (s *Store) WaitChange(ctx context.Context, key string) error {
	first, err := s.peek(ctx, key)
	if err != nil {
		return err
	}
	if !first.live() {
		return nil
	}
	cur := first
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		d := min(s.opts.PollInterval, cur.leaseExpiry.Sub(cur.now)+time.Millisecond)
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		cur, err = s.peek(ctx, key)
		if err != nil {
			return err
		}
		if !cur.live() || *cur.token != *first.token {
			return nil
		}
	}
}
