package ownstore

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/idembench/idembench/idem"
)

// recordColumns are the columns dbRow.scan reads, in its order.
const recordColumns = `status, fingerprint, token, lease_expires_at, response, expires_at`

// dbRow is one row of ownstore_keys as read.
type dbRow struct {
	status      int64
	fingerprint []byte
	token       uint64
	leaseExpiry sql.NullTime
	response    []byte
	expiresAt   time.Time
}

func (r *dbRow) scan(row *sql.Row) error {
	return row.Scan(&r.status, &r.fingerprint, &r.token, &r.leaseExpiry, &r.response, &r.expiresAt)
}

// record decodes r, the row of key, and validates it; a row that does not
// decode is an error wrapping idem.ErrCorruptRecord.
func (r *dbRow) record(key string) (*idem.Record, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("ownstore: %w: key %q: %s", idem.ErrCorruptRecord, key, fmt.Sprintf(format, args...))
	}
	rec := &idem.Record{Key: key, Token: idem.Token(r.token), ExpiresAt: r.expiresAt}
	switch r.status {
	case statusInProgress:
		rec.Status = idem.StatusInProgress
	case statusCompleted:
		rec.Status = idem.StatusCompleted
	case statusFailed:
		rec.Status = idem.StatusFailed
	default:
		return nil, corrupt("unknown status %d", r.status)
	}
	if len(r.fingerprint) != len(rec.Fingerprint) {
		return nil, corrupt("fingerprint of %d bytes", len(r.fingerprint))
	}
	copy(rec.Fingerprint[:], r.fingerprint)
	if r.leaseExpiry.Valid {
		rec.LeaseExpiry = r.leaseExpiry.Time
	}
	if r.response != nil {
		resp, err := idem.DecodeResponse(r.response)
		if err != nil {
			return nil, corrupt("response: %v", err)
		}
		rec.Response = &resp
	}
	if err := rec.Validate(); err != nil {
		return nil, fmt.Errorf("ownstore: %w", err)
	}
	return rec, nil
}
