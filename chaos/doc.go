// Package chaos injects faults into a harness run on a seeded schedule.
//
// This file set is the in-process part: faults enter through the engine's
// fault hook (idem.WithHook) and hit one execution at a time.
//
//   - crash at a point (before-fn, after-fn, after-complete, after-acquire):
//     the hook returns ErrCrash, Do returns at once with idem.ErrAborted and
//     the lease stays until it expires, as a crashed process would leave it.
//     The client sees no answer; the workload records the call as unknown.
//   - pause past the lease (the "GC pause"): the hook blocks at before-fn,
//     where no heartbeat runs, for a fixed duration longer than the lease,
//     then lets the execution go on as if nothing happened. With ThenFail
//     the resumed execution fails with a retryable error (ErrInjected)
//     instead of running its side effect, so the engine releases the key.
//
// Client timeouts, concurrent retries and duplicate deliveries are not faults
// of this package: they are the workload's retry policy and key shape.
//
// # Schedule
//
// A Fault either fires Count times, armed at seeded offsets spread over its
// window of the run (each arming hits the next execution that reaches the
// fault's point), or hits each execution reaching the point with
// Probability, decided by a seeded hash of the key and the fencing token (no
// lock, and the same execution gets the same decision for the same seed).
// The seed and the fault list fully determine the arming times; which
// execution an arming hits depends on the interleaving of the run.
//
// Every injection is reported as a Window (start, end, label) for the
// history's fault operations. Stop disarms the schedule before the
// end-of-run liveness probe.
//
// # Cancellation
//
// A pause ignores the lease (a stopped process does not notice that it lost
// it) but not the context of the call it stalls: when that context ends (the
// run was cancelled, e.g. by Ctrl-C), the pause ends at once, its window is
// recorded with "(cut short: run ended)" in its label, and the execution is
// abandoned like a crash with ErrPauseCut. No pause, however long, holds up a
// cancelled run.
//
// # Limits
//
// New rejects, with an error wrapping ErrLimit, a Count above MaxCount
// (10,000) or above MaxCountPerSecond (1,000) per second of the fault's
// window (one arming is always allowed): the arming offsets are drawn up
// front, so an unbounded count would cost memory and time before the run
// starts.
package chaos
