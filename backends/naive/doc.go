// Package naive holds deliberately broken idempotency stores: six designs
// from the idempotency literature, each an in-memory idem.Store that gets one
// thing wrong. They exist so that the harness can show it catches them: each
// must fail the conformance suite (backends/storetest) and be caught by at
// least one built-in scenario. A checker that passes them all is broken.
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
//	unfenced-takeover  UnfencedTakeover  take-over is right, but Complete/Fail ignore     gc-pause, I1, I3, I5
//	                                     the token: the stalled old holder still wins
//	delete-on-error    DeleteOnError     Release deletes the key without an owner check:  pause-then-fail, I1
//	                                     a failing old holder frees its successor's key
//	no-expiry          NoExpiry          a lock with no expiry: a crashed holder blocks   crash-holder, I6
//	                                     the key forever
//	no-heartbeat       NoHeartbeat       Heartbeat is a no-op: a slow but healthy         slow-handler, I1
//	                                     execution is taken over                          (plain sink)
//
// In backends/storetest, the case that shows each flaw is
// ConcurrentAcquireGrantsExactlyOneLease for check-then-act and
// cache-on-success, StaleTokenWritesAreFencedOff for unfenced-takeover (its
// stale Complete and Fail) and delete-on-error (its stale Release),
// TakeOverOnlyAfterExpiryWithHigherToken for no-expiry and
// HeartbeatExtendsLease for no-heartbeat. A design may fail a few more cases
// as a consequence of the same flaw; the package tests pin down which.
//
// New builds a design by the name the harness uses (Names lists them); the
// New… constructors take Options for the rest. The stores take an idem.Clock
// so the harness can drive time, start no goroutines and need no Close. They
// implement idem.Sweeper but not idem.Waiter: the engine polls them.
package naive
