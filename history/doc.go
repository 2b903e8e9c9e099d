// Package history is the record of one harness run: what every client saw
// from Engine.Do, every attempt of the business side effect as the effect
// sink (the ledger) saw it, and the fault windows the chaos schedule opened.
// The checker package reads a History to prove or refute "no double
// execution"; the workload driver writes one; the CLI saves and loads them.
//
// # Shape
//
// A History is a Header followed by a list of Ops. Every Op has a Kind:
//
//   - KindCall: one Engine.Do as the client saw it, from the moment the client
//     called it (Call) to the moment it returned (Return), with an Outcome
//     (executed, replayed, failed, in_progress, mismatch, released,
//     lease_lost, unknown, error). A call with Probe set is an end-of-run
//     liveness probe.
//   - KindEffect: one attempt of the business side effect, as recorded by
//     the effect sink, around the apply: Applied says whether the sink
//     accepted it, Token is the fencing token it carried, Exec the execution
//     id. An effect whose acknowledgement was lost has Outcome unknown and
//     should be resolved from the ledger with ResolveEffects before checking.
//   - KindFault: a fault window from Call to Return, built by Fault: Fault
//     says what it did (one of FaultKinds: crash, pause, restart,
//     partition, ...; "fault" in JSON, absent from histories written
//     before it existed) and Label describes it ("pause client 3", "crash
//     at after-fn"). CountFaults counts them by kind.
//   - KindLease: one lease step as the engine's observer saw it (a grant,
//     a take-over with the PrevToken it superseded, a renewal, an accepted
//     or refused fenced write), named by Transition, with the lease's Token;
//     Call and Return bracket the store call behind it.
//
// # Timeline
//
// Call, Return and Intended are nanoseconds on one monotonic timeline shared
// by every process of a run: Now reads CLOCK_MONOTONIC on Linux, which is
// system-wide, so timestamps taken by different worker processes on the same
// machine compare directly. An operation whose end is unknown (a timeout, a
// crash, an ambiguous backend error) has Return == NoReturn.
//
// # Encoding
//
// Encode writes JSON lines: the first line is the Header (it carries
// "format": "idembench-history" and "version"), every following line one Op.
// Decode reads that format strictly: an unknown field, a malformed line or an
// invalid operation is an error that names the line. Merge combines the
// histories written by several worker processes of one run.
//
// # Recording
//
// A Recorder collects Ops from many goroutines with no global lock per
// operation (sharded buffers, or a Buffer per goroutine), and returns them
// sorted by Call when the run is over.
package history
