// Package idem is a small idempotency-key engine: it runs a request's side
// effect at most once per key and replays the stored response to retries.
// It depends on the standard library only; storage is behind the Store
// interface (backends/memstore, backends/redisstore, backends/pgstore).
//
// # States of a key
//
//	absent ──Acquire──► in_progress(token, lease expiry)
//	in_progress ──Complete(token)──► completed(response)   kept for the retention
//	in_progress ──Fail(token)──► failed(response)          kept, replayed
//	in_progress ──Release(token)──► absent                 the fencing counter survives
//	in_progress ──lease expired + Acquire──► in_progress(token' > token)   take-over
//	completed/failed ──retention elapsed──► absent
//
// Every write after Acquire is fenced: it succeeds only while the record
// carries the writer's token. Tokens strictly increase per key for the life
// of a store, so a side-effect sink can reject a stale holder by comparing
// tokens (LeaseFrom gives the token to the function).
//
// # Engine.Do
//
// Do validates the key, claims it, runs the function under a lease renewed
// by a heartbeat, and records the outcome; see Engine.Do for every rule. The
// status codes an HTTP front maps the outcomes to:
//
//	ErrInvalidKey            400  key breaks the rules below
//	ErrFingerprintMismatch   422  key first used by a different request
//	ErrInProgress            409  another execution holds the key
//	Result.Replayed          the stored status, replayed
//	ErrLeaseLost             the execution lost its lease; its result is not stored
//	ErrBackend               store failure; fail closed, never "assume new"
//	Ambiguous(err)           the store may have applied the write: outcome unknown
//
// # Limits
//
//   - Keys: 1 to MaxKeyLen (255) bytes of printable ASCII (0x21–0x7E),
//     as stored (StorageKey): scope prefixes, separators and the escape
//     byte of a key that holds ScopeSeparator included.
//   - Scopes: WithScope, Engine.DoScoped and the middleware's Options.Scope
//     put keys in disjoint namespaces. A key is stored as given when it is
//     unscoped and holds no ':'; a key with ':' gets a leading ':', so that
//     no unscoped key can name a scoped record ("alice:k1" sent without a
//     scope is stored as ":alice:k1", not as tenant alice's "k1").
//   - Responses: DefaultMaxResponseSize (1 MiB) of body plus header names and
//     values, configurable with WithMaxResponseSize. A larger response is
//     returned to the first caller with ErrResponseTooLarge and the key is
//     stored as failed (500, naming the cause), so retries do not run the
//     side effect again.
//   - Stored records are validated when read; a record that breaks the
//     invariants or cannot be decoded yields ErrCorruptRecord, never a panic
//     and never "absent".
//   - Lease TTL defaults to 30s, the heartbeat to a third of it, retention to
//     24h. A store that does not answer heartbeats for a whole lease TTL
//     cancels the function's context, since the lease may have expired.
//
// # Fault hooks
//
// WithHook names four points (PointAfterAcquire, PointBeforeFn, PointAfterFn,
// PointAfterComplete) where a test or the idembench harness can stall an
// execution (a pause past the lease) or abort it (a crash that leaves the
// lease in place). Without a hook they cost a nil check.
//
// # Recovery
//
// A crash after the side effect and before Complete leaves a lease that
// expires; the next caller takes it over (Lease.PrevToken is set) and, with
// fencing alone, runs the effect again. WithRecovery installs a lookup
// ("did key K's effect already happen?") that the engine asks on every
// take-over; when it answers yes, the key is completed with the response it
// supplies and the function does not run again.
package idem
