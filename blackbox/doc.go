// Package blackbox checks the idempotency of any HTTP service, whatever it
// is written in, from the outside: it sends an Idempotency-Key workload
// (duplicates at once and later, client timeouts and retries, bodies that
// reuse a key), injects faults between the client and the service and
// into the service's process, records what every client saw and every
// effect that happened, and checks the history with package checker (no
// double execution, replays that match, liveness). It also probes the
// protocol (missing key, reused key, racing copies released by a barrier,
// replay, the error policy of the declared profile, isolation) and reports
// each probe as a line of a conformance table that cites the IETF httpapi
// Idempotency-Key draft (Draft), with the draft's weight: a failed MUST is
// a protocol deviation (ErrDeviation, exit 6), a failed SHOULD or MAY a
// warning, and a probe that finds a double execution or a broken replay
// fails the run as the checker's violations do (ErrViolation, exit 1). The
// run's verdict names the classes that failed (Headline), and its report
// card (Card) grades ten properties pass, fail or not tested.
//
// Run(ctx, Spec) is the whole run; the CLI ("idembench http") only parses
// flags into a Spec and maps the error to an exit code with
// checker.ExitCode.
//
// # The target
//
// A Target (strict YAML, ParseTarget or LoadTarget; unknown fields are
// errors with their line) says where the service is, or how to start it
// (argv, env, working directory, readiness URL; the harness picks the port
// and passes it as {{.Addr}}), the operation (method, path, headers, body
// template with {{.Key}}, {{.Seq}} and a seeded {{.Amount}}), the key
// header, the success statuses, where the resource id is (a JSON pointer
// or a header), and the replay marker header.
//
// # Effect oracles
//
// An effect is what must happen at most once per key. From strongest to
// weakest:
//
//   - OracleDownstream: the harness runs a mock downstream (a fake payment
//     provider, Downstream) on loopback and gives its URL to the service
//     through {{.DownstreamURL}}; every call it receives carries the key
//     and is an effect with its time, so invariants I1, I2, I4 and I6 are
//     checked in full. A service that recovers from crashes can fence its
//     calls and look them up (FencingTokenHeader, GET; see Downstream).
//   - OracleHTTP and OracleSQL: after the run, an HTTP endpoint or a
//     PostgreSQL query gives effect counts per key, without times. A count
//     above one is a double execution (I1); a success with no effect is a
//     phantom (I2).
//   - OracleResponse (the default): more than one distinct resource id
//     among a key's successful answers is a double execution. Executions
//     whose answers were lost are invisible.
//
// Every report states which oracle was used and what it cannot see.
//
// # What an answer means
//
// Each attempt becomes one history call: a success status is "executed",
// or "replayed" when it carries the replay marker (without a marker, the
// first success of a key to return is taken as its execution, and a later
// success with the same answer as a replay); the statuses the target
// declares (Statuses; by default 409 in_progress, 422 mismatch, 400 an
// error, 429 released) mean what it says; unmarked 5xx are released
// (nothing stored, the client retries); a 5xx with the replay marker is a
// stored failure; any other status is undeclared: an unknown outcome, never
// judged, and noted in the report; a transport error after the request may have left is unknown (the client
// retries), one before it left (connection refused) is an error. The
// response digest is the status and the body, so a replay that differs in
// one byte breaks I3. The transport's own silent retry of requests that
// carry an Idempotency-Key is switched off, so every request that leaves is
// recorded.
//
// # Faults
//
// A Spec's faults are chaos.Faults of the kinds of FaultKinds. Network
// faults (drop-replies, latency, reset, partition) act on an embedded
// toxiproxy (package chaos/netfault) in front of the service, which must
// then be on loopback; process faults (kill then restart, pause with
// SIGSTOP/SIGCONT) need a started service. Fault times are drawn from the seed when not given, and every
// window is recorded in the history.
//
// # Cleanup
//
// Everything Run starts is stopped before it returns, on every path,
// cancellation included: the service's whole process group (SIGTERM, then
// SIGKILL; on Linux the service also dies with the harness), the proxy
// and the mock downstream.
//
// # Limits and runs without a verdict
//
// Every input is bounded before anything starts (limits.go): a target file
// is at most MaxTargetFileSize (1 MiB); its method and header names are
// HTTP tokens and its header values and path hold no control byte, so a
// target cannot split a request; every wait is at most MaxWait (10 min);
// lists and maps hold at most MaxEntries; a Spec has at most MaxFaults
// faults. A run in which no request succeeded and no effect was seen has
// nothing to check and is not a verdict: ErrNoSuccess, a usage error when
// every answer refused the request, an environment error otherwise. A
// started service that exits during the run without a kill fault ends
// the run with ErrServiceExited (an environment error).
//
// # Run directory
//
// With Spec.Dir set, Run writes the same files as "idembench run"
// (history.jsonl, summary.json, report.md, report.html, plots, porcupine/
// visualizations of violations) plus conformance.json, and appends the
// oracle and the conformance table to report.md and report.html
// (AppendReportSection appends them again after "idembench report"
// rewrote both). A run whose ctx ends writes the history so far and
// conformance.json.
package blackbox
