// Package naive holds deliberately broken idempotency stores: designs
// from the idempotency literature, peers' issue trackers and store authors, each an
// in-memory idem.Store that gets one thing wrong. They exist so that the harness can show it catches them: each
// must fail the conformance suite (backends/storetest), unless its flaw
// needs more than one clock (skewed-leases), and be caught by at least one
// built-in scenario. A checker that passes them all is broken.
// Never use them to guard real side effects.
//
// Apart from its one flaw, every design is a sound store: fencing tokens come
// from one counter and only grow, writes other than the broken one are fenced,
// completed and failed responses are replayed byte for byte, fingerprints are
// kept, records expire after their retention. So what the harness finds is
// the flaw and nothing else.
//
//	design             type              flaw                                             caught by (scenario, invariant)
//	check-then-act     CheckThenAct      Acquire reads, then writes: not atomic;          duplicates, I1
//	                                     concurrent duplicates all get a lease
//	cache-on-success   CacheOnSuccess    no in-progress state; only Complete writes;      duplicates, I1
//	                                     concurrent duplicates all run
//	unfenced-takeover  UnfencedTakeover  take-over is right, but Complete/Fail ignore     gc-pause, I3, I4
//	                                     the token: the stalled old holder still wins
//	delete-on-error    DeleteOnError     Release deletes the key without an owner check:  pause-then-fail, I1
//	                                     a failing old holder frees its successor's key
//	no-expiry          NoExpiry          a lock with no expiry: a crashed holder blocks   crash-holder, I6
//	                                     the key forever
//	no-heartbeat       NoHeartbeat       Heartbeat is a no-op: a slow but healthy         slow-handler, I1
//	                                     execution is taken over                          (plain sink)
//	token-restart      TokenRestart      tokens counted in the record restart at 1 once   retryable-failures, I7;
//	                                     it is deleted (Release, retention expiry)        pause-successor-fails, I8
//	racy-takeover      RacyTakeover      take-over reads, then overwrites: several        takeover-race, I7, I8
//	                                     callers take over the same expired lease         (plain sink: I1)
//	unfenced-heartbeat UnfencedHeartbeat Heartbeat renews whatever lease the key has:     stale-heartbeat, I8
//	                                     a superseded holder is never told
//	fail-open          FailOpen          a backend error in Acquire is taken as "new      duplicates, I1
//	                                     key, go ahead" (every 16th call fails)
//	keeps-pending      KeepsPending      Release leaves the pending record: the key       retryable-failures, I6
//	                                     answers "in progress" until its retention ends
//	unscoped-key       UnscopedKey       records found by key alone, the request          mismatched-requests, I4
//	                                     (endpoint, body) ignored: requests share one
//	two-step-takeover  TwoStepTakeover   take-over reads, then writes the next token:     takeover-race, I7
//	                                     overlapping callers all take one lease over      (two take-overs of
//	                                                                                      one token)
//	fail-on-expiry     FailOnExpiry      an expired lease is stored as a permanent        gc-pause, I4 (effect
//	                                     failure: the slow holder's effect lands after    after the commit)
//	                                     the clients were told "failed"
//	retries-uncertain  RetriesUncertain  an uncertain record is handed to the next        uncertain-outcomes
//	                                     request: the effect runs again                   (--no-recovery), I9
//	touch-on-read      TouchOnRead       an Acquire that finds a live lease extends it:   crash-holder, T2
//	                                     a dead holder's key stays blocked while its
//	                                     clients retry
//	lean-record        LeanRecord        a record keeps the body only: a 201 with         duplicates, I3
//	                                     Location and ETag replays as a bare 200
//	skewed-leases      SkewedLeases      lease expiry judged by each app server's own     duplicates
//	                                     clock: a server whose clock runs ahead takes     (--clock-skew 1s), T1
//	                                     over a lease live in true time
//
// I7 (token order over lease grants) and I8 (no write under a superseded
// token) are the checker's invariants for the lease grants the engine
// reports; with the default fenced sink and recovery the sink absorbs the
// double execution that token-restart, racy-takeover and unfenced-heartbeat
// allow, and only those invariants see the flaw.
//
// In backends/storetest, the case that shows each flaw is
// ConcurrentAcquireGrantsExactlyOneLease for check-then-act and
// cache-on-success, StaleTokenWritesAreFencedOff for unfenced-takeover (its
// stale Complete and Fail) and delete-on-error (its stale Release),
// TakeOverOnlyAfterExpiryWithHigherToken for no-expiry and
// HeartbeatExtendsLease for no-heartbeat; TokensIncreaseAcrossReleaseAndRetention
// for token-restart and keeps-pending (with ReleaseMakesKeyAbsentAndRetryable),
// ConcurrentTakeOverGrantsExactlyOneLease for racy-takeover and fail-open (and
// ConcurrentAcquireGrantsExactlyOneLease for fail-open),
// StaleTokenWritesAreFencedOff for unfenced-heartbeat, and
// TakeOverRefusedForDifferentFingerprint and FingerprintKeptWithRecord for
// unscoped-key; ConcurrentTakeOverGrantsExactlyOneLease for
// two-step-takeover and TakeOverOnlyAfterExpiryWithHigherToken for
// fail-on-expiry; ReadsDoNotExtendLease for touch-on-read and
// CompleteStoresResponseForReplay for lean-record. skewed-leases passes
// the suite, which runs on one clock: its flaw needs app servers whose
// clocks disagree. A design may fail a few more cases as a consequence of the
// same flaw; the package tests pin down which.
//
// New builds a design by the name the harness uses (Names lists them); the
// New… constructors take Options for the rest. The stores take an idem.Clock
// so the harness can drive time, start no goroutines and need no Close. They
// implement idem.Sweeper but not idem.Waiter: the engine polls them.
package naive
