package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/cli"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/idem"
)

// A store author's binary: the CLI with one more engine. Every subcommand
// then takes --engine mystore.
func Example_customEngine() {
	mine := harness.StoreFactory{
		Name:     "mystore",
		Backends: []harness.Backend{harness.Memory},
		Open: func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
			st := memstore.New(memstore.Options{Clock: env.Clock})
			return st, st, nil
		},
	}
	all := append(engines.Builtin(), mine)
	cli.Run(context.Background(), []string{"engines"}, os.Stdout, os.Stderr, all...)
	code := cli.Run(context.Background(), []string{"run", "--engine", "mystore", "--scenario", "duplicates",
		"--duration", "300ms", "--seed", "1", "--no-save", "--no-progress"}, io.Discard, os.Stderr, all...)
	fmt.Println("exit", code)
	// Output:
	// idem                      memory, redis, postgres, dynamodb · sink tx
	//                           the reference engine (package idem): fenced leases, heartbeats, recovery
	// naive/check-then-act      memory
	//                           reads the key, then writes it: concurrent duplicates all get the lease (duplicates: I1)
	// naive/cache-on-success    memory
	//                           no in-progress record, only the response is stored: concurrent duplicates all run (duplicates: I1)
	// naive/unfenced-takeover   memory
	//                           completing ignores the token: a paused old holder overwrites its successor (gc-pause: I1, I3 or I5)
	// naive/delete-on-error     memory
	//                           release deletes the key without an owner check: a failing old holder frees its successor's key (pause-then-fail: I1)
	// naive/no-expiry           memory
	//                           a lock that never expires: a crashed holder blocks its key forever (crash-holder: I6)
	// naive/no-heartbeat        memory
	//                           the heartbeat does nothing: a slow but healthy execution is taken over (slow-handler --sink plain: I1)
	// naive/token-restart       memory
	//                           the token lives in the record and restarts at 1 once it is deleted (retryable-failures: I7 or I8)
	// naive/racy-takeover       memory
	//                           take-over reads, then overwrites: several callers take over one expired lease (takeover-race: I7 or I8)
	// naive/unfenced-heartbeat  memory
	//                           the heartbeat renews whatever lease the key has: a superseded holder is never told (stale-heartbeat: I8)
	// naive/fail-open           memory
	//                           a store error on acquire is taken as a new key, go ahead (duplicates: I1 or I4)
	// naive/keeps-pending       memory
	//                           release leaves the pending record: the key answers in progress until it expires (retryable-failures: I6)
	// naive/unscoped-key        memory
	//                           records found by key alone, the request ignored: different requests share one answer (mismatched-requests: I4)
	// naive/two-step-takeover   memory
	//                           take-over reads, then writes the next token: callers that read one expired lease all take it over (takeover-race: I7)
	// naive/fail-on-expiry      memory
	//                           an expired lease is failed instead of taken over: the slow holder's effect lands after the failure was answered (gc-pause: I4)
	// naive/retries-uncertain   memory
	//                           an uncertain record is handed to the next request: an effect whose answer was lost runs again (uncertain-outcomes --no-recovery: I9)
	// naive/touch-on-read       memory
	//                           a retry that finds a live lease extends it: a dead holder's key stays blocked while clients retry (crash-holder: T2)
	// naive/lean-record         memory
	//                           a record keeps the body only: a 201 with Location and ETag replays as a bare 200 (duplicates: I3)
	// naive/skewed-leases       memory
	//                           lease expiry judged by each app server's own clock: a server running ahead takes over a live lease (duplicates --clock-skew 1s: T1)
	// naive/unfenced-completer  memory, redis, postgres, dynamodb
	//                           the reference stores with a completer that finishes stuck keys without fencing the paused holder (abandoned-keys: I1)
	// mystore                   memory
	// exit 0
}
