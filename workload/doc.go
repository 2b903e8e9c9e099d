// Package workload is the harness's driver: concurrent clients that call
// idem.Engine.Do against any idem.Store, a business function whose side
// effect goes to an effect sink (which keeps the ledger: the record of which
// effects were applied), and a recorder that writes what every client saw
// and every effect that happened into a history.
//
// # Shape of a run
//
// Run has three phases:
//
//  1. Traffic, for Config.Duration. Closed loop (Rate == 0): Clients
//     goroutines each send a request, wait for its final answer (retrying
//     per Config.Retry), and send the next. Open loop (Rate > 0): a pacer
//     schedules requests at Rate per second and Clients workers send them;
//     every call records the time it was meant to be sent (Op.Intended), so
//     latency is measured from there and a stalled driver cannot hide its
//     own delay (sends later than Config.LateAfter are counted as late).
//  2. Drain: no new requests; requests in flight finish their retries, and
//     calls abandoned by a client timeout run to their end. Faults are then
//     stopped (Config.Faults.Stop).
//  3. Liveness probe (invariant I6): after one lease TTL on the store's
//     clock, these keys are called once more with their original
//     fingerprint, recorded with Probe set: every key with a delivery that
//     ended without a final answer (executed, replayed, failed or mismatch)
//     once its attempts ran out, every key that saw an unknown or
//     lease_lost call (crashes, timeouts, lost leases), and each client's
//     last key as a sample, so that I6 is always checked.
//
// # Requests and keys
//
// Keys are unique per logical request, or drawn from a Zipf distribution
// over a fixed key space (hot keys). A logical request may be delivered
// more than once: extra copies at the same time by other clients
// (Keys.Concurrent) and/or later (Keys.Delayed copies, Keys.Delay apart).
// A fraction of deliveries may reuse a key with another request body
// (Keys.MismatchRate), which a correct engine answers with 422.
//
// # The business function
//
// Each execution sleeps for a latency drawn from Business.Latency, may fail
// retryably or permanently (Business.RetryableRate, PermanentRate), and
// otherwise applies its effect to the Sink with the lease's fencing token
// (idem.LeaseFrom) and a fresh execution id, even when its context was
// cancelled: it models a process that does not know it lost its lease,
// which is exactly what fencing must catch. Its response names the key and
// the execution ("ok <key> <exec>"), so a double execution also shows up as
// a replay that differs. It answers as a payments API does: 201 Created
// with Location, ETag and Content-Type headers, 422 for a permanent
// failure, so a replay must give back status and headers too (I3). A fenced
// sink that rejects the effect makes the function fail permanently with
// ErrStale, answered 409 (a correct engine then refuses the Fail by
// fencing: lease_lost).
//
// # Randomness
//
// Everything random comes from Config.Seed: each client (and the open-loop
// pacer) has its own PCG stream derived from the seed and its id, and all
// per-call draws (latency, failure, backoff jitter) are made by the client
// before the call.
//
// # Limits
//
// Check, Validate and Run reject a configuration beyond these limits with a
// *FieldError (wrapping ErrConfig) that names the field, the value and the
// limit. A zero keeps its documented meaning of "the default".
//
//	field                           limit
//	duration                        > 0, at most 24h (MaxDuration)
//	clients                         0 (default 16) or 1 to 10,000 (MaxClients)
//	rate                            0 (closed loop) or up to 1,000,000 requests/s (MaxRate); finite
//	engine.lease_ttl                0 (default) or 10ms to 24h (MinLeaseTTL, MaxLeaseTTL)
//	engine.heartbeat                off, default, or an interval of at least 1ms below the lease TTL
//	engine.retention                0 (default) or 1s to 30 days (MinRetention, MaxRetention)
//	engine.conflict_wait            0 to 10m (MaxWait)
//	keys.space                      up to 1,000,000,000 (MaxKeySpace)
//	keys.zipf_s                     above 1, at most 10 (MaxZipfS)
//	keys.concurrent, keys.delayed   0 to 100 copies each (MaxCopies)
//	keys.delay                      0 to 10m
//	retry.max_attempts              0 (one) to 1,000 (MaxAttempts)
//	retry.timeout                   0 (none) or 1ms to 10m (MinTimeout, MaxWait)
//	retry.backoff, max_backoff      at most 10m
//	business.latency.*              0 to 10m
//	fractions and rates             finite numbers in [0, 1] (NaN and infinities are errors)
//	late_after, drain_timeout       at most 10m
//
// Every wait of a run (pacing, backoff, client timeouts, the business
// function's work, the liveness probe's wait) ends when Run's context
// ends, so a cancelled run returns promptly.
package workload
