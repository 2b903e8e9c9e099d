// Package ownstore is an idem.Store a user might write for a database the
// project does not ship a backend for: MySQL or MariaDB, on
// github.com/go-sql-driver/mysql. It lives in a module of its own, like a
// user's code, and proves itself the way any store should: with the
// conformance suite (backends/storetest) and the harness.
//
// Every transition is one atomic step on the server:
//
//   - Acquire is one transaction at READ COMMITTED: SELECT … FOR UPDATE of
//     the key's row; if the key is free, or its lease expired (a take-over,
//     same fingerprint only), a token from the counter and an INSERT or
//     UPDATE of the row; else the row is returned. Two callers that race for
//     an absent key both try to INSERT: one gets a duplicate-key error and
//     starts over, and then sees the winner's row.
//   - Heartbeat, Complete and Fail are one UPDATE each, fenced on the
//     caller's token ("WHERE k = ? AND token = ? AND status = in progress");
//     Release is one fenced DELETE. A write that matches no row is
//     idem.ErrLeaseLost. The connection reports matched rather than changed
//     rows (clientFoundRows), so renewing a lease to the same instant is not
//     taken for a loss.
//   - Fencing tokens come from one counter row, raised with "UPDATE … SET v =
//     LAST_INSERT_ID(v + 1)" inside the claim's transaction: global, durable,
//     never reset when a record is released or expires, so they grow per key
//     across Release and retention expiry (a counter kept in the key's own
//     row would restart; see backends/naive's token-restart).
//   - All times are the server's (UTC_TIMESTAMP(6)). Lease.Expiry after a
//     heartbeat is estimated from the local clock before the statement was
//     sent, so it is never later than the server's.
//   - Records are kept until expires_at: the retention for completed and
//     failed ones, the lease plus a take-over grace of 24 hours for
//     in-progress ones, so that a take-over knows the previous token
//     (Lease.PrevToken) and the recovery hook runs. Reads ignore expired
//     rows; Sweep deletes them in batches.
//   - Keys are VARBINARY(255): compared byte for byte, never through a
//     case-insensitive collation that would let two keys share one row.
//
// Errors from the server are wrapped with idem.BackendError (fail closed); a
// write that may have run before its connection failed is also marked
// idem.MarkAmbiguous. A row the store cannot decode is
// idem.ErrCorruptRecord.
//
// The schema (Open creates it if it is missing):
//
//	CREATE TABLE ownstore_tokens (id TINYINT PRIMARY KEY, v BIGINT UNSIGNED NOT NULL);
//	CREATE TABLE ownstore_keys (
//	    k                VARBINARY(255) PRIMARY KEY,
//	    status           TINYINT NOT NULL,         -- 0 in progress, 1 completed, 2 failed
//	    fingerprint      BINARY(32) NOT NULL,
//	    token            BIGINT UNSIGNED NOT NULL,
//	    prev_token       BIGINT UNSIGNED NOT NULL,
//	    lease_expires_at DATETIME(6) NULL,
//	    response         LONGBLOB NULL,            -- idem.EncodeResponse
//	    expires_at       DATETIME(6) NOT NULL,
//	    KEY (expires_at)
//	) ENGINE=InnoDB;
package ownstore
