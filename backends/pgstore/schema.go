package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrateLock is the advisory lock key that serialises concurrent Migrate
// calls, so two processes starting at once do not race on CREATE ... IF NOT
// EXISTS (which is not safe against itself).
const migrateLock = "github.com/idembench/idembench/backends/pgstore.Migrate"

// schemaSQL creates the sequence, the records table, its expiry index and the
// fenced-effect ledger, each only when missing.
const schemaSQL = `
CREATE SEQUENCE IF NOT EXISTS {{seq}} AS bigint MINVALUE 1 NO CYCLE;
CREATE TABLE IF NOT EXISTS {{table}} (
	key              text PRIMARY KEY,
	status           text NOT NULL,
	fingerprint      bytea NOT NULL,
	token            bigint NOT NULL,
	prev_token       bigint NOT NULL DEFAULT 0,
	lease_expires_at timestamptz,
	response         bytea,
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL,
	expires_at       timestamptz NOT NULL
);
ALTER TABLE {{table}} ADD COLUMN IF NOT EXISTS fp_policy text;
CREATE INDEX IF NOT EXISTS {{index}} ON {{table}} (expires_at);
CREATE TABLE IF NOT EXISTS {{ledger}} (
	effect_key text PRIMARY KEY,
	last_token bigint NOT NULL,
	updated_at timestamptz NOT NULL
);`

// Migrate creates the schema described in the package documentation when it
// is missing and leaves an existing one alone, so it is safe to call at every
// start and from several processes at once (an advisory lock serialises
// them). On a table created by an earlier version it adds the columns
// added since, nullable (fp_policy: rows written before read as stored
// under no fingerprint policy id), and alters nothing else. The sequence
// is not owned by the table: dropping the table by hand keeps the token
// counter, so tokens never restart.
func (s *Store) Migrate(ctx context.Context) error {
	ddl := s.ddl()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, migrateLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ddl)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: migrate %s: %w", s.table, err)
	}
	return nil
}

func (s *Store) ddl() string {
	return replaceNames(schemaSQL, s.table, s.seq, s.ledger, s.index)
}
