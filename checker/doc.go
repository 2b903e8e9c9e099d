// Package checker proves or refutes "no double execution" for a recorded
// run (a history.History). Check returns a Report with a Verdict (ok,
// violation, inconclusive), the violations found (invariant, key, message,
// the operations involved with their times, tokens, clients and workers) and
// per-invariant counts.
//
// # Invariants
//
// Every invariant is checked per key (ops are partitioned by Key; fault ops
// belong to no key and only annotate visualizations).
//
//   - I1 at-most-once: at most one effect is applied per key. Only effects
//     with a known outcome count; unresolved ones (Outcome Unknown) cannot
//     prove a double execution.
//   - I2 no phantom success: a key that returned a success (executed or
//     replayed) has an applied effect behind it, and the first effect
//     started before the first success returned. More than one effect is
//     reported by I1, not I2. A key whose only effects are unresolved is
//     not a violation. Failed (stored permanent failure) is not a success:
//     a permanent failure may legitimately happen before any effect.
//   - I3 replay consistency: every response returned for a key (executed,
//     replayed, failed) has the same digest.
//   - I4 linearizable key: the key's calls and effects are linearizable
//     against the key model below, checked with Porcupine.
//   - I5 fencing: no effect, and no completion (executed, or failed with a
//     token), is accepted with a token lower than that of an applied effect
//     that returned before it was called. Ledger order is real-time order:
//     overlapping operations are not compared, and token 0 means "unfenced"
//     and is skipped.
//   - I6 liveness: an end-of-run probe (a call with Probe set) must not get
//     in_progress, unknown or error. A history without probes is not
//     checked for I6 (Report.Notes says so).
//   - I7 token order: over the key's lease grants (lease ops acquired and
//     taken_over, recorded by the engine's observer), a grant called after
//     another returned carries a higher token, no two grants share a
//     token, and a take-over's PrevToken is below its token and not below
//     any token granted before it (it superseded the latest lease). This
//     holds across take-over, release and retention expiry. And, whatever
//     the timing: at most one take-over per previous token per key (an
//     atomic take-over supersedes a lease once; two take-overs reporting
//     the same previous token read one expired lease and both wrote, a
//     take-over done in two steps, which overlapping grants hide from the
//     real-time rules).
//   - I8 no superseded write: no accepted write (lease ops completed,
//     failed, heartbeat, released) carries a token lower than a grant that
//     returned before the write was called; and no failure is stored (a
//     failed lease op, or a failed call with a token) by an execution
//     whose own effect the sink rejected as stale (a rejection the sink
//     answered, not one resolved from a lost acknowledgement).
//
// I7 (but for its take-over rule) and I8 compare only ops ordered in real
// time, like I5; a history
// without lease ops checks I8's stored failures from the calls alone and
// has nothing for I7.
//
// # The key model (I4)
//
// State: {effects 0|1, committed none|(response, fingerprint)}.
//
//   - effect applied: legal only if effects == 0 and nothing is
//     committed, then effects = 1. An effect the sink rejected changes
//     nothing. So no effect may land after the key's answer was given, and
//     in particular not after a stored permanent failure: an effect that
//     can only be placed after a failed (stored or replayed) is a client
//     told "failed" while the effect happened. An effect the failing
//     execution applied itself before storing the failure is legal (the
//     business function did it, then failed), and so is one that overlaps
//     the failure in time (it may have come first).
//   - executed(resp): legal only if effects == 1 and nothing is committed;
//     commits resp. A recovery completion (the engine stores the response
//     of an effect a crashed holder already applied) is legal because that
//     effect was linearized first.
//   - failed(resp) with a token (this call ran and stored a permanent
//     failure): legal only if nothing is committed; commits resp, whatever
//     effects is, since a permanent failure may come before the effect.
//     Without a token it is a replay of a stored failure: legal if resp
//     matches the commit, or, when nothing is committed, treated as the
//     first execution (the recorder may not know the token).
//   - replayed(resp): legal only if resp (and, when both are known, the
//     fingerprint) match the commit.
//   - in_progress: legal only while nothing is committed.
//   - mismatch: the holder of an uncommitted record is not modelled, so a
//     mismatch is always legal while nothing is committed; after a commit
//     it is legal unless both fingerprints are known and equal (then the
//     engine should have replayed).
//   - released, lease_lost, error: no change (and left out of the search).
//   - unknown call: nondeterministic, with Return = NoReturn: it did
//     nothing, or (if nothing was committed) it committed a response that
//     the first later replay reveals. When the key has a call that
//     committed (executed, or failed with a token), unknown calls can only
//     have done nothing and are left out of the search.
//   - unresolved effect: applied or not. When the key has a known applied
//     effect, unresolved ones can only have been rejected and are left out.
//
// The nondeterminism is handled by a power-set model: Porcupine's state is
// the set of possible key states.
//
// # Cost and timeouts
//
// The ledger invariants are linear in the number of ops, I5, I7 and I8
// n log n in a key's effects or grants. For I4, in order of cost:
//
//   - a key that fails I1 or I3 cannot be linearizable and is reported
//     without a search;
//   - the main path: a decision procedure (decide.go) that is linear in
//     the key's ops decides every key whose possible committers carry a
//     fingerprint (every key the workload records): at most one commit
//     and one applied effect per key turn the model's rules into bounds on
//     the commit point, checked for each possible committer in O(1). A
//     property test cross-checks it against Porcupine on random small
//     histories with unknown outcomes. Only keys outside its domain go on;
//   - a key whose model-relevant ops are totally ordered in time has one
//     possible order and is stepped through directly;
//   - otherwise a greedy search looks for one linearization without
//     backtracking (legal ops that leave the state unchanged first, which
//     is always safe; then the state-changing op that must end soonest);
//     finding one proves the key linearizable;
//   - only keys without such a witness go to Porcupine, on
//     Options.Workers goroutines, under the Options.Timeout budget.
//
// A key whose search does not finish in the budget is inconclusive, and so
// is the verdict unless something else is violated: a timeout is never ok.
// Only for keys that fail I4 does Check run Porcupine's verbose search and
// write its HTML visualization into Options.VisualizeDir.
//
// # Limits
//
// Retention comes from the history header (Header.Retention). With it, a
// key whose record expired and was executed again is split into the lives
// of its record (by fencing token: see epochs in epoch.go) and I1 to I4
// hold per life; a stale execution from before the expiry accepted after a
// newer life began still counts against its own life (and I5). Without it
// (zero), records are assumed to outlive the run, and such a re-execution
// shows up as an I1 violation. Every op of a key must carry the same Key
// string; key scoping is the recorder's business. Ledger order for I5 is inferred from
// real time, so two overlapping effects are never compared.
package checker
