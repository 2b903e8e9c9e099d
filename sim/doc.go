// Package sim runs the engine (idem.Engine with its heartbeat, the
// completer and retention) and any Go idem.Store in virtual time, inside
// a testing/synctest bubble, with every choice decided by one seed:
// arrivals, copies of a request, crashes, pauses, lost replies and lost
// requests, uncertain outcomes of the business call, stalls inside a store
// call, each app server's clock offset and the order of the actions that
// happen at one virtual instant, down to the round trips inside a store
// call for a store that makes them through RoundTrip (sim/simredis runs
// the Redis store's real scripts on an in-process Redis that way). Hours of production timings (30 s leases, 24 h
// retention, a completer every minute) take seconds of wall time, and the
// same seed gives the same history byte for byte.
//
// The history is the harness's (history.Op), checked by the same checker
// (checker.Check) plus the timing invariants only a simulation can
// judge exactly (checker.CheckTiming: T1, no take-over of a lease live in
// true time; T2, take-over liveness).
//
// Determinism: every goroutine of the simulation that touches shared
// state (a store call, an effect, a resumption after a sleep) parks at a
// scheduler; when the bubble is quiet (synctest.Wait) the seed picks the
// one that runs next, and it runs alone until it blocks. Two parts are not
// ordered by the seed and rely on commuting instead: the engine's lease
// renewals (Store.Heartbeat is called outside the scheduler, see
// gatedStore) and a store's own goroutines. The recorded ops are sorted by
// time and encoding, so their arrival order does not matter. See
// docs/design/simulation.md.
//
// testing/synctest exists only in tests, so Run takes a *testing.T: the
// entry points are Go tests (sim/simtest for store authors; go test ./sim
// -run TestSim -sim.seed N for one seed).
package sim
