// Package harness runs one idembench run end to end as a library: it opens
// the store under test through any factory (Engine.Open gets an Env with
// the backend kind, its URL, a per-run key prefix and the clock), the
// effect sink and the backend faults, drives the scenario's workload with
// its in-process faults, assembles the history, checks it (package
// checker), measures it (package reports) and writes the run directory.
//
//	o, err := harness.Run(ctx, harness.Spec{Engine: mine, ScenarioName: "gc-pause"})
//	// o.Report.Verdict, o.Summary, o.History; err wraps ErrConfig or ErrEnvironment
//
// A verdict is never an error: a violation, an inconclusive check or a
// missed threshold is in the Outcome. Errors are the runs that produced no
// verdict: ErrConfig (a spec the harness cannot run) and ErrEnvironment (a
// server or resource that did not answer); the CLI maps them to exit codes
// 2 and 5.
//
// Engines are named in a Registry; harness/engines registers the reference
// engine and the known-bad designs through the same Engine type a user's
// store uses. Prepare and Prepared.Finish are the two halves of Run for
// callers that drive the clients themselves: harness/multiproc runs them
// in worker processes. harness/harnesstest runs every built-in scenario
// against a store from a Go test.
package harness
