package cli

import (
	"fmt"
	"strings"

	"github.com/idembench/idembench/harness"
)

// enginesCmd is `idembench engines`.
type enginesCmd struct{}

// engineJSON is one entry of `idembench engines --json`.
type engineJSON struct {
	Name     string   `json:"name"`
	Backends []string `json:"backends"`
	Tx       bool     `json:"tx"`
	// Flaw says, for a known-bad engine, what it gets wrong and which
	// scenario catches it; empty for the reference engine and for an
	// engine this binary does not describe.
	Flaw string `json:"flaw,omitempty"`
}

// engineFlaws says in one line what each known-bad engine that ships with
// idembench gets wrong (backends/naive documents each design), and the
// scenario and invariant that catch it.
var engineFlaws = map[string]string{
	harness.ReferenceEngine:    "the reference engine (package idem): fenced leases, heartbeats, recovery",
	"naive/check-then-act":     "reads the key, then writes it: concurrent duplicates all get the lease (duplicates: I1)",
	"naive/cache-on-success":   "no in-progress record, only the response is stored: concurrent duplicates all run (duplicates: I1)",
	"naive/unfenced-takeover":  "completing ignores the token: a paused old holder overwrites its successor (gc-pause: I1, I3 or I5)",
	"naive/delete-on-error":    "release deletes the key without an owner check: a failing old holder frees its successor's key (pause-then-fail: I1)",
	"naive/no-expiry":          "a lock that never expires: a crashed holder blocks its key forever (crash-holder: I6)",
	"naive/no-heartbeat":       "the heartbeat does nothing: a slow but healthy execution is taken over (slow-handler --sink plain: I1)",
	"naive/token-restart":      "the token lives in the record and restarts at 1 once it is deleted (retryable-failures: I7 or I8)",
	"naive/racy-takeover":      "take-over reads, then overwrites: several callers take over one expired lease (takeover-race: I7 or I8)",
	"naive/unfenced-heartbeat": "the heartbeat renews whatever lease the key has: a superseded holder is never told (stale-heartbeat: I8)",
	"naive/fail-open":          "a store error on acquire is taken as a new key, go ahead (duplicates: I1 or I4)",
	"naive/keeps-pending":      "release leaves the pending record: the key answers in progress until it expires (retryable-failures: I6)",
	"naive/unscoped-key":       "records found by key alone, the request ignored: different requests share one answer (mismatched-requests: I4)",
	"naive/two-step-takeover":  "take-over reads, then writes the next token: callers that read one expired lease all take it over (takeover-race: I7)",
	"naive/fail-on-expiry":     "an expired lease is failed instead of taken over: the slow holder's effect lands after the failure was answered (gc-pause: I4)",
	"naive/retries-uncertain":  "an uncertain record is handed to the next request: an effect whose answer was lost runs again (uncertain-outcomes --no-recovery: I9)",
	"naive/touch-on-read":      "a retry that finds a live lease extends it: a dead holder's key stays blocked while clients retry (crash-holder: T2)",
	"naive/lean-record":        "a record keeps the body only: a 201 with Location and ETag replays as a bare 200 (duplicates: I3)",
	"naive/skewed-leases":      "lease expiry judged by each app server's own clock: a server running ahead takes over a live lease (duplicates --clock-skew 1s: T1)",
	"naive/unfenced-completer": "the reference stores with a completer that finishes stuck keys without fencing the paused holder (abandoned-keys: I1)",
}

func (c *enginesCmd) Run(std stdio, g *globals, reg *harness.Registry) error {
	var list []engineJSON
	width := 0
	for _, name := range reg.Names() {
		e, _ := reg.Lookup(name)
		bs := e.Backends
		if len(bs) == 0 {
			bs = harness.Backends
		}
		row := engineJSON{Name: name, Tx: e.OpenTxSink != nil, Flaw: engineFlaws[name]}
		if name == harness.ReferenceEngine {
			row.Flaw = ""
		}
		for _, b := range bs {
			row.Backends = append(row.Backends, string(b))
		}
		list = append(list, row)
		width = max(width, len(name))
	}
	if g.JSON {
		return writeJSON(std.out, list)
	}
	for _, e := range list {
		where := strings.Join(e.Backends, ", ")
		if e.Tx {
			where += " · sink tx"
		}
		fmt.Fprintf(std.out, "%-*s  %s\n", width, e.Name, where)
		if what := engineFlaws[e.Name]; what != "" {
			fmt.Fprintf(std.out, "%-*s  %s\n", width, "", what)
		}
	}
	return nil
}

// Help is the detailed help of `idembench engines --help`, with examples.
func (c *enginesCmd) Help() string {
	return `Lists the engines this binary can run (the values of --engine), one line
each: the name and the backends it runs on (sink tx: it has a transactional
mode); under it, for a known-bad design, what it gets wrong, with the
scenario and invariant that catch it. The naive/ engines are broken on purpose: run one
to see the harness catch its flaw (exit 1).

Examples:

    idembench engines
    idembench run --engine naive/check-then-act --scenario duplicates   # caught: exit 1
    idembench engines --json | jq -r '.[] | select(.flaw) | .name'

` + exitHelp(exitOK, exitUsage)
}
