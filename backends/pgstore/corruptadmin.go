package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idembench/idembench/idem"
)

// rowDigestSQL is the digest of a row t: the SHA-256 of a JSON array of
// every column (bytea as hex, times as epoch seconds, NULL as null), so
// it does not depend on the session's time zone or output formats.
const rowDigestSQL = `encode(sha256(convert_to(jsonb_build_array(
	t.key, t.status, encode(t.fingerprint, 'hex'), t.token::text, t.prev_token::text,
	extract(epoch FROM t.lease_expires_at)::text, encode(t.response, 'hex'),
	extract(epoch FROM t.created_at)::text, extract(epoch FROM t.updated_at)::text,
	extract(epoch FROM t.expires_at)::text, t.fp_policy)::text, 'UTF8')), 'hex')`

// rawRowSQL reads every column of key's present row and its digest. $1 key.
const rawRowSQL = `
SELECT t.status, t.fingerprint, t.token, t.prev_token, t.lease_expires_at, t.response,
	t.created_at, t.updated_at, t.expires_at, t.fp_policy, ` + rowDigestSQL + `
FROM {{table}} t
WHERE t.key = $1 AND t.status <> 'released' AND t.expires_at > statement_timestamp()`

// purgeCorruptSQL deletes key's row if its digest is still $2. $1 key.
const purgeCorruptSQL = `DELETE FROM {{table}} t WHERE t.key = $1 AND ` + rowDigestSQL + ` = $2::text`

// GetCorrupt implements idem.CorruptLister. A row is corrupt exactly when
// Get cannot decode it.
func (s *Store) GetCorrupt(ctx context.Context, key string) (*idem.CorruptRecord, error) {
	var (
		r                rawRow
		created, updated pgtype.Timestamptz
		digest           string
	)
	err := s.queryRow(ctx, "inspect", false, s.names(rawRowSQL), []any{key}, &r.status, &r.fingerprint,
		&r.token, &r.prevToken, &r.leaseExpiry, &r.response, &created, &updated, &r.expiresAt, &r.policy, &digest)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: key %q: %w", key, idem.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	_, derr := r.record(key)
	if derr == nil {
		return nil, fmt.Errorf("pgstore: key %q: %w", key, idem.ErrNotCorrupt)
	}
	text := func(name, v string) idem.RawField { return idem.RawField{Name: name, Value: []byte(v)} }
	bytea := func(name string, v []byte) idem.RawField {
		return idem.RawField{Name: name, Value: v, Null: v == nil}
	}
	ts := func(name string, v pgtype.Timestamptz) idem.RawField {
		if !v.Valid {
			return idem.RawField{Name: name, Null: true}
		}
		return text(name, timeText(v))
	}
	return &idem.CorruptRecord{
		Key: key, Reason: derr.Error(), Type: "row", Digest: digest,
		Fields: []idem.RawField{
			text("status", r.status),
			bytea("fingerprint", r.fingerprint),
			text("token", strconv.FormatInt(r.token, 10)),
			text("prev_token", strconv.FormatInt(r.prevToken, 10)),
			ts("lease_expires_at", r.leaseExpiry),
			bytea("response", r.response),
			ts("created_at", created),
			ts("updated_at", updated),
			ts("expires_at", r.expiresAt),
			policyField(r.policy),
		},
	}, nil
}

// ListCorrupt implements idem.CorruptLister: it decodes every present row
// whose key starts with prefix in Go, with Get's decoder, and reads the
// columns of those that do not decode.
func (s *Store) ListCorrupt(ctx context.Context, prefix string, limit int) ([]*idem.CorruptRecord, error) {
	limit = idem.ListLimit(limit)
	var keys []string
	err := s.eachPresentRow(ctx, "list", prefix, func(key string, _ *idem.Record, err error, _ time.Time) bool {
		if err != nil {
			keys = append(keys, key)
		}
		return len(keys) < limit
	})
	if err != nil {
		return nil, err
	}
	out := make([]*idem.CorruptRecord, 0, len(keys))
	for _, k := range keys {
		rec, err := s.GetCorrupt(ctx, k)
		switch {
		case errors.Is(err, idem.ErrNotFound), errors.Is(err, idem.ErrNotCorrupt):
			continue // changed since the first read
		case err != nil:
			return out, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// PurgeCorrupt implements idem.CorruptPurger. It reads the row, checks that
// it does not decode and has digest, then deletes it with one DELETE whose
// WHERE recomputes the digest on the server, so the row deleted is column
// for column the one that was checked.
func (s *Store) PurgeCorrupt(ctx context.Context, key, digest string) error {
	rec, err := s.GetCorrupt(ctx, key)
	if err != nil {
		return err
	}
	if rec.Digest != digest {
		return fmt.Errorf("pgstore: key %q: digest %s, not %s: %w", key, rec.Digest, digest, idem.ErrRecordChanged)
	}
	n, err := s.exec(ctx, "purge", true, s.names(purgeCorruptSQL), key, digest)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("pgstore: key %q: %w", key, idem.ErrRecordChanged)
	}
	return nil
}

// policyField is the fp_policy column as a raw field (NULL when absent).
func policyField(p *string) idem.RawField {
	if p == nil {
		return idem.RawField{Name: "fp_policy", Null: true}
	}
	return idem.RawField{Name: "fp_policy", Value: []byte(*p)}
}
