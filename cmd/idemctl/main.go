// Command idemctl is the operator tool of the idempotency engine: it
// inspects keys, lists stuck ones, force-releases a key under its fencing
// token, counts records, purges expired ones, and finds and deletes
// corrupt records (fenced by the digest of their content), on a Redis
// (single node or Cluster) or PostgreSQL store.
//
// A KEY argument is the key a client sends; it is stored as the engine
// stores it, idem.StorageKey(KEY, --scope), so without --scope it names
// the unscoped client's key, never a tenant's record.
//
//	idemctl --store redis://127.0.0.1:6379/0 inspect order-42
//	idemctl --store redis://127.0.0.1:6379/0 --scope acme inspect order-42
//	idemctl --store 'postgres://postgres@127.0.0.1:5432/test' list --stuck --older-than 5m
//	idemctl --store redis://127.0.0.1:6379/0 release order-42 --token 9
//	idemctl --store redis://127.0.0.1:6379/0 --json stats
//	idemctl --store 'postgres://…' purge --expired
//	idemctl --store 'postgres://…' list --corrupt
//	idemctl --store 'postgres://…' purge-corrupt order-42 --confirm 3f…
//
// Run idemctl -h for the flags and exit codes, idemctl help COMMAND (or
// idemctl COMMAND --help, which needs no --store) for one command with
// examples, idemctl --version for the idembench version it was built from.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
