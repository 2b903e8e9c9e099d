// Package pgstore is an idem.Store on PostgreSQL (pgx v5, pgxpool), with a
// transactional mode (DoTx) that commits a request's business writes and its
// completed record together, a batched sweeper, a polling idem.Waiter and a
// fenced side-effect ledger (ApplyFenced).
//
//	pool, _ := pgxpool.New(ctx, "postgres://...")
//	store, _ := pgstore.New(pool, pgstore.Options{})
//	if err := store.Migrate(ctx); err != nil { ... }
//	stop := store.StartSweeper(ctx)
//	defer stop()
//	engine := idem.New(store)
//
// # Schema
//
// Migrate creates, when missing (names for the default Options.Table):
//
//	CREATE SEQUENCE idem_keys_token_seq AS bigint;   -- fencing tokens, global
//	CREATE TABLE idem_keys (
//	    key              text PRIMARY KEY,        -- already scoped by the caller
//	    status           text NOT NULL,           -- in_progress, completed, failed, released
//	    fingerprint      bytea NOT NULL,          -- 32 bytes
//	    token            bigint NOT NULL,         -- from the sequence
//	    prev_token       bigint NOT NULL DEFAULT 0, -- token replaced by a take-over
//	    lease_expires_at timestamptz,             -- in_progress only
//	    response         bytea,                   -- idem.EncodeResponse; completed/failed only
//	    created_at, updated_at timestamptz NOT NULL,
//	    expires_at       timestamptz NOT NULL     -- row is absent from then on
//	);
//	CREATE INDEX idem_keys_expires_at_idx ON idem_keys (expires_at);
//	CREATE TABLE idem_keys_fence (effect_key text PRIMARY KEY, last_token bigint NOT NULL, updated_at timestamptz NOT NULL);
//
// A row is present while status <> 'released' and expires_at is in the
// future; otherwise the key is absent to every operation, whether or not the
// sweeper has deleted the row yet, so retention is exact. expires_at is the
// completion time plus retention for completed and failed rows, and the lease
// expiry plus Options.TakeoverGrace (default 24h) for rows in progress.
// Release turns the row into a tombstone ('released', expires_at = now).
//
// Every time is the server's statement_timestamp(), one value per statement;
// durations travel as interval parameters; the client's clock is never
// stored or compared. Table and schema names are checked against
// ^[a-z_][a-z0-9_]{0,39}$ and quoted with pgx.Identifier.Sanitize; every
// value is a statement parameter.
//
// # Atomicity
//
// Each idem.Store method is one SQL statement in its own implicit
// transaction, so each transition is atomic.
//
// Acquire is one INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE. The
// unique index on key makes concurrent inserts of one key serialise: one
// inserts, the others reach the conflict arm, which locks the row and
// evaluates the WHERE against its latest committed version. The WHERE admits
// only an absent row (tombstone or expired) or a take-over (in progress,
// lease expired, same fingerprint), so of N concurrent claims exactly one
// succeeds. The conflict arm draws the new token with nextval while holding
// the row lock, so it exceeds every token the row carried; prev_token keeps
// the replaced token when the row was present, which Acquire returns as
// Lease.PrevToken. Release keeps a tombstone and expired rows are
// overwritten in place, so a key's row is deleted only by the sweeper, and
// only after it has been absent for a minute. A claim that finds no row at
// all draws its token a moment before inserting rather than under a lock;
// the minute makes sure no row with a higher token came and went in that
// moment. Tokens come from one sequence, so they strictly increase per key
// across Release, take-over and expiry.
//
// When the conflict arm declines, PostgreSQL returns nothing for the row, so
// the same statement reads it in a second UNION branch. That read uses the
// statement's snapshot, taken before the row lock was acquired: under a burst
// of concurrent claims it may not yet see the row a concurrent claim just
// committed, or may see an older, claimable version of it. Both cases are
// detected (no row, or a row flagged claimable) and Acquire runs the
// statement again; the next snapshot includes the version that made the
// conflict arm decline. This is not a retry on a unique violation and never
// happens when the key is new or the caller wins; it costs one more round
// trip to callers that lose a race, at most 16 times before Acquire fails
// closed. A record returned otherwise was the key's state at the snapshot,
// a moment inside the call.
//
// Heartbeat, Complete, Fail and Release are fenced UPDATEs matching
// key, token, status 'in_progress' and a present row; zero rows matched means
// idem.ErrLeaseLost and nothing changed. An expired lease that was not taken
// over still matches: fencing is by token, expiry only permits a take-over.
//
// # Transactional mode
//
// DoTx claims the key like Acquire, then runs the business function with a
// pgx.Tx, then the fenced completion UPDATE inside that transaction, then
// COMMIT. The fence is checked last, at READ COMMITTED on the row's latest
// version, under the row lock it takes until COMMIT: a holder whose lease was
// taken over matches no row and rolls its business writes back, and a
// successor cannot take over between the check and the commit. Before that
// point the holder holds no lock on the key, so a stalled holder does not
// block a take-over. The effect-plus-completion window that fencing alone
// cannot close (see the architecture notes) does not exist for effects in the
// same database. A heartbeat renews the lease on another connection while the
// function runs (disabled above READ COMMITTED). CompleteTx is the same
// fenced completion for callers that manage their own transaction.
//
// # Sweeper
//
// Sweep deletes rows absent for at least a minute in batches of
// Options.SweepBatch (default 1000),
// each batch one DELETE of keys picked with SELECT ... FOR UPDATE SKIP LOCKED
// through the expires_at index, until a batch is short. Sweepers in several
// processes split the work without waiting on each other and never delete a
// row twice. StartSweeper runs Sweep at once and then every
// Options.SweepInterval (default one minute). Sweeping only reclaims space:
// correctness never depends on it.
//
// # Waiting
//
// WaitChange polls the row every Options.PollInterval (default 50ms), or when
// the watched lease is due to expire if that is sooner, and returns when the
// live lease it saw is gone. Every wake-up re-reads the row, so no change can
// be lost between a check and a sleep. It does not use LISTEN/NOTIFY: a
// NOTIFY in every completion would serialise committing transactions across
// the database, and each waiter would hold a connection.
//
// # Errors and guarantees
//
// A failure to reach the server, or of a statement, wraps idem.ErrBackend:
// the store fails closed and never reports a key as absent because it could
// not read it. A write whose statement may have reached the server (a
// timeout or lost connection after sending; pgconn.SafeToRetry false and no
// server error) is also idem.MarkAmbiguous: it may have been applied. A
// cancelled context before sending is not ambiguous. A row that does not
// decode (status, fingerprint length, token, response encoding, record
// invariants) wraps idem.ErrCorruptRecord and is never treated as absent.
//
// Fail closed on every stored byte: a present row that does not decode
// exactly as row.record would decode it is never claimed, never replayed
// and never overwritten; the call fails closed with idem.ErrCorruptRecord
// naming the key and the column. The statements enforce this themselves:
// the claim predicate (claimableSQL) and the fenced writes (fencedWhere)
// require what row.record requires of an in-progress row (no response, a
// finite lease, a finite expiry, a 32-byte fingerprint, a positive token
// above a non-negative previous token), and a fenced write that matched
// nothing reads the row again to report ErrCorruptRecord instead of
// idem.ErrLeaseLost when it does not decode. A released row, or one past
// its expires_at, is absent whatever it holds and may be overwritten.
// TestPlantedRecords holds the store to this rule with random mutations of
// every column (pgregory.net/rapid).
//
// A claim never issues a token at or below the token of the row it
// overwrites, whatever the sequence says: the token it draws must be above
// the row's, or Acquire fails closed with ErrCounterBehind (the sequence
// was reset, or restored from an older copy than the table) and names the
// sequence; see ErrCounterBehind for the one statement that repairs it.
// An operator finds corrupt rows with "idemctl list --corrupt", sees their
// raw columns with "idemctl inspect", and removes one with "idemctl
// purge-corrupt", which deletes the row only if it is still what was
// inspected.
//
// Limits: keys follow idem.ValidateKey (1 to 255 printable ASCII bytes);
// responses are stored as they come, up to PostgreSQL's 1 GB bytea limit
// (the engine's size cap applies before); lease TTLs must be positive and
// retention non-negative; timestamps have microsecond resolution.
//
// The backend keeps its guarantees across server restarts and failovers to
// the extent PostgreSQL keeps committed transactions (synchronous_commit,
// replication). The token sequence is not transactional; a crash may skip
// values, never repeat them.
//
// # Replicas and failover
//
// With asynchronous streaming replication (PostgreSQL's default), a commit
// is acknowledged once it is flushed on the primary; a failover to a
// standby that had not received it loses it: a completed request runs
// again, a claimed key can be claimed twice, and the token sequence may
// hand out values again that the lost WAL had issued. Run the store's
// primary with a synchronous standby (synchronous_standby_names naming it,
// synchronous_commit on or remote_apply) to keep every acknowledged write
// across a failover to that standby; CheckReplication reports the setting
// in use and whether a synchronous standby is attached.
package pgstore
