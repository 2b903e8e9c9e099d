package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
)

// Exit codes.
const (
	exitOK       = 0 // done
	exitRefused  = 1 // release refused: the token moved or the lease is live
	exitUsage    = 2 // bad flags or arguments
	exitNotFound = 3 // no record for the key
	exitBackend  = 5 // the store failed or lacks the capability
)

const usageText = `usage: idemctl [global flags] COMMAND [flags] [args]

Commands:
  inspect KEY                       status, token, lease expiry, fingerprint, response size, expiries
  list --stuck [--older-than D]     in-progress keys whose lease expired (at least D ago)
  release KEY --token N [--force]   fenced release: refused if the key no longer carries token N;
                                    a live lease needs --force
  stats                             records per status, stuck count, storage used
  purge --expired                   delete expired records now (PostgreSQL; Redis expires its own)

Global flags:
  --store URL     redis://host:port/db, redis-cluster://host:port?addr=host2:port, postgres://...
                  (default $IDEMCTL_STORE)
  --prefix P      Redis key prefix (default idem)
  --table T       PostgreSQL table (default idem_keys); --schema S its schema
  --scope S       the key's scope (tenant): KEY is stored as idem.StorageKey(KEY, S)
  --json          print JSON instead of text

Exit codes: 0 done, 1 release refused, 2 usage, 3 key not found, 5 store error.
`

// globals are the flags before the command.
type globals struct {
	store, prefix, table, schema, scope string
	json                                bool
}

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var g globals
	fs := flag.NewFlagSet("idemctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	fs.StringVar(&g.store, "store", os.Getenv("IDEMCTL_STORE"), "store URL")
	fs.StringVar(&g.prefix, "prefix", "", "Redis key prefix")
	fs.StringVar(&g.table, "table", "", "PostgreSQL table")
	fs.StringVar(&g.schema, "schema", "", "PostgreSQL schema")
	fs.StringVar(&g.scope, "scope", "", "key scope")
	fs.BoolVar(&g.json, "json", false, "JSON output")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	c, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "idemctl: unknown command %q\n%s", cmd, usageText)
		return exitUsage
	}
	if g.store == "" {
		fmt.Fprintln(stderr, "idemctl: --store (or IDEMCTL_STORE) is required")
		return exitUsage
	}
	store, closeStore, err := openStore(ctx, g)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return exitBackend
	}
	defer closeStore()
	out := &output{w: stdout, json: g.json}
	code, err := c(ctx, &env{g: g, store: store, out: out}, rest)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl %s: %v\n", cmd, err)
	}
	return code
}

// env is what a command works with.
type env struct {
	g     globals
	store idem.Store
	out   *output
}

// storageKey applies --scope to a key argument.
func (e *env) storageKey(key string) (string, error) {
	if e.g.scope == "" {
		return key, idem.ValidateKey(key)
	}
	return idem.StorageKey(key, e.g.scope)
}

// command runs one subcommand and returns its exit code and the error to
// print.
type command func(ctx context.Context, e *env, args []string) (int, error)

var commands = map[string]command{
	"inspect": inspect,
	"list":    list,
	"release": release,
	"stats":   stats,
	"purge":   purge,
}

// output prints text or JSON.
type output struct {
	w    io.Writer
	json bool
}

// print writes v as JSON with --json, else the text lines.
func (o *output) print(v any, lines ...string) {
	if o.json {
		enc := json.NewEncoder(o.w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return
	}
	fmt.Fprintln(o.w, strings.Join(lines, "\n"))
}

// storeErr maps a store error to its exit code.
func storeErr(err error) (int, error) {
	switch {
	case errors.Is(err, idem.ErrNotFound):
		return exitNotFound, err
	case errors.Is(err, idem.ErrInvalidKey):
		return exitUsage, err
	}
	return exitBackend, err
}

// subFlags parses a subcommand's flags, which may come before or after its
// positional arguments.
func subFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// ago describes t relative to now: "in 3s" or "2m0s ago".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Millisecond)
	if d >= 0 {
		return t.UTC().Format(time.RFC3339Nano) + " (in " + d.String() + ")"
	}
	return t.UTC().Format(time.RFC3339Nano) + " (" + (-d).String() + " ago)"
}
