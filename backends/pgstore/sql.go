package pgstore

import "strings"

// statements holds the SQL text of every operation, with the table, sequence
// and ledger names already substituted (they are validated and quoted by
// New). Values always travel as parameters. Every statement takes the time
// from the server's statement_timestamp(): the start of the statement, one
// value for the whole statement, the same inside and outside a transaction
// (now() would be the transaction's start), and stable, so usable in index
// conditions.
type statements struct {
	acquire   string
	heartbeat string
	finish    string // Complete and Fail
	release   string
	get       string
	peek      string
	sweep     string
	apply     string
	fenced    string
}

// The predicate "the row is present": not released and not past expires_at.
// A row failing it is logically absent even before the sweeper deletes it.
// It appears in each statement with the table alias in front.

// claimableSQL is the predicate "the row {{r}} may be claimed by a caller
// with fingerprint {{fp}}": it is absent (released, or past expires_at:
// logically gone, never decoded), or it is an in-progress record whose
// lease expired, whose fingerprint is the caller's and which decodes as
// row.record would accept it (no response, a lease, a positive token above
// its previous one, finite times: pgx cannot scan an infinite timestamp).
// A corrupt in-progress row is never claimable: Acquire
// returns it and row.record reports it.
const claimableSQL = `({{r}}.status = 'released'
		OR {{r}}.expires_at <= statement_timestamp()
		OR ({{r}}.status = 'in_progress'
			AND {{r}}.lease_expires_at <= statement_timestamp() AND isfinite({{r}}.lease_expires_at)
			AND isfinite({{r}}.expires_at)
			AND {{r}}.fingerprint = {{fp}}
			AND {{r}}.response IS NULL
			AND {{r}}.token > 0 AND {{r}}.prev_token >= 0 AND {{r}}.prev_token < {{r}}.token
			AND ` + "{{policyOK}}" + `))`

// claimable returns claimableSQL for the row alias r and fingerprint fp.
func claimable(r, fp string) string {
	return strings.NewReplacer("{{policyOK}}", policyOK(r), "{{r}}", r, "{{fp}}", fp).Replace(claimableSQL)
}

// policyOK is the predicate "the fp_policy of row alias r decodes": NULL,
// or at most 128 bytes of 0x21..0x7E, as idem.ValidatePolicy accepts
// (row.record checks it with Validate).
func policyOK(r string) string {
	return "(" + r + ".fp_policy IS NULL OR (octet_length(" + r + ".fp_policy) <= 128 AND " + r + ".fp_policy ~ '^[!-~]*$'))"
}

// acquireSQL claims a key in one statement. $1 key, $2 fingerprint,
// $3 lease TTL, $4 take-over grace, $5 fingerprint policy id ("" is stored
// as NULL; a take-over keeps the row's).
//
// The INSERT proposes a fresh in-progress row. On a key conflict the DO
// UPDATE fires only when the existing row is claimable (see claimableSQL)
// and the token drawn from the sequence, while holding the row lock, is
// above the row's token; the SET then takes that token (currval: the value
// the WHERE drew) and keeps the old token in prev_token when the row was
// still present (a take-over). So a new token is always higher than any
// token the row carried, whatever the sequence says.
//
// When the DO UPDATE does not fire, PostgreSQL still locks the row but
// returns nothing, so the second branch of the UNION reads the row. That read
// uses the statement's snapshot, which may predate a row committed by a
// concurrent claim a moment ago: then it returns no row, or a row that would
// have been claimable. The column "retry" flags both cases (no row at all is
// the other) and Acquire runs the statement again; the new snapshot sees the
// row that made the DO UPDATE decline. See doc.go for the argument. The
// column "behind" flags a claimable row whose token is not below the
// sequence's value (the sequence was reset or restored behind the table):
// Acquire fails closed with ErrCounterBehind rather than issue a lower
// token.
var acquireSQL = `
WITH up AS (
	INSERT INTO {{table}} AS r (key, status, fingerprint, token, prev_token,
		lease_expires_at, response, created_at, updated_at, expires_at, fp_policy)
	VALUES ($1, 'in_progress', $2, nextval('{{seq}}'::regclass), 0,
		statement_timestamp() + $3::interval, NULL, statement_timestamp(), statement_timestamp(),
		statement_timestamp() + $3::interval + $4::interval, NULLIF($5::text, ''))
	ON CONFLICT (key) DO UPDATE SET
		status = 'in_progress',
		fingerprint = EXCLUDED.fingerprint,
		token = currval('{{seq}}'::regclass),
		prev_token = CASE WHEN r.status <> 'released' AND r.expires_at > statement_timestamp()
			THEN r.token ELSE 0 END,
		lease_expires_at = EXCLUDED.lease_expires_at,
		response = NULL,
		created_at = CASE WHEN r.status <> 'released' AND r.expires_at > statement_timestamp()
			THEN r.created_at ELSE EXCLUDED.created_at END,
		updated_at = EXCLUDED.updated_at,
		expires_at = EXCLUDED.expires_at,
		fp_policy = CASE WHEN r.status <> 'released' AND r.expires_at > statement_timestamp()
			THEN r.fp_policy ELSE EXCLUDED.fp_policy END
	WHERE ` + claimable("r", "EXCLUDED.fingerprint") + `
		AND nextval('{{seq}}'::regclass) > r.token
	RETURNING true AS acquired, false AS retry, false AS behind, r.status, r.fingerprint, r.token,
		r.prev_token, r.lease_expires_at, r.response, r.expires_at, r.fp_policy
)
SELECT * FROM up
UNION ALL
SELECT false, c.ok AND currval('{{seq}}'::regclass) > t.token, c.ok AND currval('{{seq}}'::regclass) <= t.token,
	t.status, t.fingerprint, t.token, t.prev_token, t.lease_expires_at, t.response, t.expires_at, t.fp_policy
FROM {{table}} t, LATERAL (SELECT ` + claimable("t", "$2") + ` IS TRUE AS ok) c
WHERE t.key = $1 AND NOT EXISTS (SELECT FROM up)`

// fencedWhere is the ownership test of every write after Acquire: the row is
// present, in progress, carries the caller's token and decodes (row.record
// accepts it), so a write never overwrites a corrupt row. An expired lease
// that was not taken over still passes.
const fencedWhere = `t.key = $1 AND t.token = $2 AND t.status = 'in_progress' AND t.expires_at > statement_timestamp()
	AND t.response IS NULL AND isfinite(t.lease_expires_at) AND isfinite(t.expires_at) AND octet_length(t.fingerprint) = 32
	AND t.prev_token >= 0 AND t.prev_token < t.token AND ` + "(t.fp_policy IS NULL OR (octet_length(t.fp_policy) <= 128 AND t.fp_policy ~ '^[!-~]*$'))"

// heartbeatSQL: $1 key, $2 token, $3 lease TTL, $4 take-over grace.
const heartbeatSQL = `
UPDATE {{table}} t SET
	lease_expires_at = statement_timestamp() + $3::interval,
	expires_at = statement_timestamp() + $3::interval + $4::interval,
	updated_at = statement_timestamp()
WHERE ` + fencedWhere + `
RETURNING t.lease_expires_at`

// finishSQL completes or fails: $1 key, $2 token, $3 status, $4 encoded
// response, $5 retention.
const finishSQL = `
UPDATE {{table}} t SET
	status = $3,
	response = $4,
	lease_expires_at = NULL,
	updated_at = statement_timestamp(),
	expires_at = statement_timestamp() + $5::interval
WHERE ` + fencedWhere

// tombstoneSet is the SET list that turns a row into a tombstone that is
// absent right away (status 'released', expires_at now). Keeping the row
// until the sweeper deletes it means a later claim of the key goes through
// the DO UPDATE branch of acquireSQL, which draws its token under the row
// lock.
const tombstoneSet = `
	status = 'released',
	lease_expires_at = NULL,
	response = NULL,
	updated_at = statement_timestamp(),
	expires_at = statement_timestamp()`

// releaseSQL turns the row into a tombstone: $1 key, $2 token.
const releaseSQL = `
UPDATE {{table}} t SET` + tombstoneSet + `
WHERE ` + fencedWhere

// getSQL: $1 key.
const getSQL = `
SELECT t.status, t.fingerprint, t.token, t.prev_token, t.lease_expires_at, t.response, t.expires_at, t.fp_policy
FROM {{table}} t
WHERE t.key = $1 AND t.status <> 'released' AND t.expires_at > statement_timestamp()`

// peekSQL returns the server time and, when the key is present, its token,
// status and lease expiry. $1 key.
const peekSQL = `
SELECT statement_timestamp(), t.token, t.status, t.lease_expires_at
FROM (SELECT) c
LEFT JOIN {{table}} t ON t.key = $1 AND t.status <> 'released' AND t.expires_at > statement_timestamp()`

// sweepSQL deletes at most $1 rows that have been absent for at least $2
// (sweepMargin). The inner SELECT locks the rows it picks and skips rows
// another session has locked (a concurrent sweeper, a claim overwriting the
// row), so concurrent sweepers never wait on each other and never delete a
// row twice; a row that a claim revived since the snapshot fails the
// re-checked condition and is not picked.
const sweepSQL = `
DELETE FROM {{table}}
WHERE key = ANY(ARRAY(
	SELECT key FROM {{table}}
	WHERE expires_at <= statement_timestamp() - $2::interval
	LIMIT $1
	FOR UPDATE SKIP LOCKED))`

// applySQL records that effect $1 was applied under token $2, unless a
// higher token was recorded before. A row comes back only when it applied.
const applySQL = `
INSERT INTO {{ledger}} AS f (effect_key, last_token, updated_at)
VALUES ($1, $2, statement_timestamp())
ON CONFLICT (effect_key) DO UPDATE SET
	last_token = EXCLUDED.last_token,
	updated_at = EXCLUDED.updated_at
WHERE f.last_token <= EXCLUDED.last_token
RETURNING true`

// fencedTokenSQL: $1 effect key.
const fencedTokenSQL = `SELECT last_token FROM {{ledger}} WHERE effect_key = $1`

// replaceNames substitutes the quoted names into a statement template.
func replaceNames(sql, table, seq, ledger, index string) string {
	return strings.NewReplacer("{{table}}", table, "{{seq}}", seq, "{{ledger}}", ledger, "{{index}}", index).Replace(sql)
}

func buildStatements(table, seq, ledger string) statements {
	r := func(sql string) string { return replaceNames(sql, table, seq, ledger, "") }
	return statements{
		acquire:   r(acquireSQL),
		heartbeat: r(heartbeatSQL),
		finish:    r(finishSQL),
		release:   r(releaseSQL),
		get:       r(getSQL),
		peek:      r(peekSQL),
		sweep:     r(sweepSQL),
		apply:     r(applySQL),
		fenced:    r(fencedTokenSQL),
	}
}
