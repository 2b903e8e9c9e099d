package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/idembench/idembench/idem"
)

var _ idem.ConfigChecker = (*Store)(nil)

// ErrAsyncCommit reports a server that acknowledges commits before they are
// durable (synchronous_commit = off): a crash can lose records the store
// reported as written, and the retry of a completed request runs again.
var ErrAsyncCommit = errors.New("pgstore: synchronous_commit is off")

// CheckConfig verifies that the store's sessions commit durably: it reads
// synchronous_commit on a connection of the pool (the value the store's
// statements run with, server default, role, database or connection
// setting included). It returns nil unless that value is "off", then an
// error wrapping ErrAsyncCommit and idem.ErrUnsafeConfig; an error
// wrapping idem.ErrBackend when the server cannot be asked. "local" is
// durable on this server and accepted; whether a standby has the commit is
// CheckReplication's concern.
func (s *Store) CheckConfig(ctx context.Context) error {
	var v string
	if err := s.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
		return backendError("check config", err, false)
	}
	if v == "off" {
		return fmt.Errorf("%w (%w): the server acknowledges commits before they are durable", ErrAsyncCommit, idem.ErrUnsafeConfig)
	}
	return nil
}
