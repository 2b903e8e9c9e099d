package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/idem"
)

var _ idem.UncertainStore = (*Store)(nil)

// MarkUncertain stores resp as the uncertain outcome of l's execution, kept
// for retention: Complete's statement with the status 'uncertain'. Fenced
// like Complete. An uncertain row is never claimable (claimableSQL takes
// over in-progress rows only).
func (s *Store) MarkUncertain(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, nil, "uncertain", l, idem.StatusUncertain, resp, retention)
}

// uncertainWhere is the test of a resolution: the row is present,
// uncertain, carries the token the operator named, and decodes (row.record
// accepts it), so a resolution never overwrites a corrupt row. $1 key, $2
// token.
const uncertainWhere = `t.key = $1 AND t.token = $2 AND t.status = 'uncertain' AND t.expires_at > statement_timestamp()
	AND t.response IS NOT NULL AND t.lease_expires_at IS NULL AND isfinite(t.expires_at)
	AND octet_length(t.fingerprint) = 32 AND t.prev_token >= 0 AND t.prev_token < t.token`

// resolveAppliedSQL completes an uncertain row: $1 key, $2 token, $3
// encoded response, $4 retention.
const resolveAppliedSQL = `
UPDATE {{table}} t SET
	status = 'completed',
	response = $3,
	updated_at = statement_timestamp(),
	expires_at = statement_timestamp() + $4::interval
WHERE ` + uncertainWhere

// resolveNotAppliedSQL turns an uncertain row into a tombstone, as
// releaseSQL does an in-progress one (its lease_expires_at is NULL
// already): $1 key, $2 token.
const resolveNotAppliedSQL = `
UPDATE {{table}} t SET` + tombstoneSet + `
WHERE ` + uncertainWhere

// Resolve implements idem.UncertainStore with one UPDATE. When it matches
// no row, a read tells an absent key (idem.ErrNotFound) and a corrupt row
// (idem.ErrCorruptRecord) from one that is not uncertain with token
// (idem.ErrNotUncertain).
func (s *Store) Resolve(ctx context.Context, key string, token idem.Token, applied *idem.Response, retention time.Duration) error {
	if retention < 0 {
		return fmt.Errorf("pgstore: resolve %q: negative retention %v", key, retention)
	}
	tok, ok := pgToken(token)
	if !ok {
		return fmt.Errorf("pgstore: resolve %q: token %d: %w", key, token, idem.ErrNotUncertain)
	}
	sql, args := s.names(resolveNotAppliedSQL), []any{key, tok}
	if applied != nil {
		sql, args = s.names(resolveAppliedSQL), []any{key, tok, idem.EncodeResponse(applied), retention}
	}
	n, err := s.exec(ctx, "resolve", true, sql, args...)
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	if _, err := s.Get(ctx, key); errors.Is(err, idem.ErrNotFound) || errors.Is(err, idem.ErrCorruptRecord) {
		return fmt.Errorf("pgstore: resolve: %w", err)
	}
	return fmt.Errorf("pgstore: resolve %q token %d: %w", key, token, idem.ErrNotUncertain)
}
