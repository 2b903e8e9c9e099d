package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Exit codes.
const (
	exitOK         = 0 // done
	exitRefused    = 1 // fenced refusal: the token moved, the lease is live, or the record changed
	exitUsage      = 2 // bad flags or arguments
	exitNotFound   = 3 // no record for the key
	exitCorrupt    = 4 // the key's record does not decode (inspect shows its raw fields)
	exitBackend    = 5 // the store failed or lacks the capability
	exitNotCorrupt = 6 // purge-corrupt refused: the record decodes, it is not corrupt
)

const usageText = `usage: idemctl [global flags] COMMAND [flags] [args]

Commands:
  inspect KEY                       status, token, lease expiry, fingerprint, response size, expiries;
                                    a corrupt record: its raw stored fields, why it does not decode,
                                    and its digest (exit 4)
  list --stuck [--older-than D]     in-progress keys whose lease expired (at least D ago)
  list --corrupt                    keys whose records do not decode, with the reason and digest
  list --uncertain                  uncertain keys, with the token resolve needs
                                    (all: --limit N, at most N keys, default 1000)
  release KEY --token N [--force]   fenced release: refused if the key no longer carries token N;
                                    a live lease needs --force
  resolve KEY --token N (--applied RESPONSE | --not-applied)
                                    settle an uncertain key, fenced by token N: store RESPONSE
                                    (JSON or @FILE) as its outcome, or free the key; audited on stderr
  purge-corrupt KEY --confirm D     delete KEY's record only if it still does not decode and its
                                    content still has digest D (printed by inspect, list --corrupt);
                                    a record that decodes is never deleted
  stats                             records per status, stuck count, corrupt count, storage used
  purge --expired                   delete expired records now (PostgreSQL; Redis expires its own)
  COMMAND --help, help COMMAND      the command's usage and examples (no --store needed)

Global flags:
  --store URL     redis://host:port/db, redis-cluster://host:port?addr=host2:port, postgres://...
                  (default $IDEMCTL_STORE)
  --prefix P      Redis key prefix (default idem)
  --table T       PostgreSQL table (default idem_keys); --schema S its schema
  --scope S       the scope (tenant) of the key arguments, and of the keys list shows; nested
                  scopes as outer:inner. KEY is the key a client sends: it is stored as
                  idem.StorageKey(KEY, S), as the engine stores it, so without --scope KEY names
                  the unscoped client's key (a KEY holding ':' is stored as ":KEY"), never a
                  tenant's. stats and purge cover the whole store and take no --scope.
  --json          print JSON instead of text
  --version       print the idemctl version and exit

Exit codes: 0 done, 1 refused (release: the token moved or the lease is live; resolve: the key
is not uncertain with that token; purge-corrupt: the record changed since its digest was printed), 2 usage, 3 key not found, 4 record corrupt,
5 store error, 6 purge-corrupt refused: the record decodes.
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
	version := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return exitOK
		}
		return exitUsage
	}
	if *version {
		fmt.Fprintln(stdout, "idemctl", history.ToolVersion())
		return exitOK
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		return help(rest, stdout, stderr)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "idemctl: unknown command %q\n%s", name, usageText)
		return exitUsage
	}
	if wantsHelp(rest) {
		printHelp(stdout, name, c)
		return exitOK
	}
	scopes, err := parseScope(g.scope)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return exitUsage
	}
	if g.scope != "" && !c.scoped {
		fmt.Fprintf(stderr, "idemctl: %s covers the whole store; --scope does not apply to it\n", name)
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
	code, err := c.run(ctx, &env{g: g, scopes: scopes, store: store, out: out, stderr: stderr}, rest)
	if err != nil {
		fmt.Fprintf(stderr, "idemctl %s: %v\n", name, err)
	}
	return code
}

// help is `idemctl help [COMMAND]`: the usage, or COMMAND's help.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	c, ok := commands[args[0]]
	if len(args) > 1 || !ok {
		fmt.Fprintf(stderr, "idemctl: help %s: want idemctl help [COMMAND], COMMAND one of %s\n", strings.Join(args, " "), strings.Join(commandNames(), ", "))
		return exitUsage
	}
	printHelp(stdout, args[0], c)
	return exitOK
}

// printHelp prints the help of the command name: its usage line, what it
// does and its examples.
func printHelp(w io.Writer, name string, c command) {
	fmt.Fprintf(w, "usage: idemctl [global flags] %s\n%s\n\nExamples:\n\n", c.usage, c.help)
	for _, ex := range c.examples {
		fmt.Fprintf(w, "  %s\n", ex)
	}
	fmt.Fprintln(w, "\nRun idemctl -h for the global flags and exit codes.")
}

// wantsHelp reports whether a subcommand's arguments ask for its help
// (-h, -help or --help before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// parseScope splits --scope into its scopes, outermost first: "" is none,
// "svc:acme" is the engine scope svc with the tenant acme inside it.
func parseScope(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	scopes := strings.Split(s, string(idem.ScopeSeparator))
	for _, sc := range scopes {
		if sc == "" {
			return nil, fmt.Errorf("--scope %q: empty scope", s)
		}
	}
	if _, err := idem.StorageKey("k", scopes...); err != nil {
		return nil, fmt.Errorf("--scope %q: %w", s, err)
	}
	return scopes, nil
}

// env is what a command works with.
type env struct {
	g      globals
	scopes []string // --scope, outermost first
	store  idem.Store
	out    *output
	stderr io.Writer // resolve's audit line
}

// storageKey maps a key argument, a key as a client sends it, to the key
// the store keeps, as the engine maps it: idem.StorageKey(key, --scope).
// Without --scope a key that holds ':' is the unscoped client's key
// (stored ":key"), never a tenant's record.
func (e *env) storageKey(key string) (keyName, error) {
	stored, err := idem.StorageKey(key, e.scopes...)
	if err != nil {
		return keyName{}, err
	}
	return keyName{Key: key, Scope: strings.Join(e.scopes, string(idem.ScopeSeparator)), Stored: stored}, nil
}

// scopePrefix is the stored-key prefix of --scope's keys, "" without one.
func (e *env) scopePrefix() string {
	if len(e.scopes) == 0 {
		return ""
	}
	return strings.Join(e.scopes, string(idem.ScopeSeparator)) + string(idem.ScopeSeparator)
}

// keyName is a key as the operator names it (the client's key and its
// scope) and as the store keeps it.
type keyName struct {
	Key    string `json:"key"`
	Scope  string `json:"scope,omitempty"`
	Stored string `json:"stored_key"`
}

// nameOf inverts idem.StorageKey: the scopes and client key of a stored
// key. Scopes never hold ':', so the stored form reads left to right: a
// leading ':' starts an escaped key, which runs to the end; otherwise each
// ':' ends a scope, and the part after the last one is the key.
func nameOf(stored string) keyName {
	var scopes []string
	rest := stored
	for {
		if strings.HasPrefix(rest, ":") {
			rest = rest[1:]
			break
		}
		i := strings.IndexByte(rest, idem.ScopeSeparator)
		if i < 0 {
			break
		}
		scopes = append(scopes, rest[:i])
		rest = rest[i+1:]
	}
	return keyName{Key: rest, Scope: strings.Join(scopes, string(idem.ScopeSeparator)), Stored: stored}
}

// String names the key for an operator: the client's key, with its scope
// when it has one ("live (scope acme)").
func (k keyName) String() string {
	if k.Scope == "" {
		return k.Key
	}
	return k.Key + " (scope " + k.Scope + ")"
}

// column is the key as a list line's first columns: the key, then its
// scope when it has one.
func (k keyName) column() string {
	if k.Scope == "" {
		return k.Key
	}
	return k.Key + "\tscope " + k.Scope
}

// command is one subcommand.
type command struct {
	run      func(ctx context.Context, e *env, args []string) (int, error)
	usage    string   // the arguments, after the command name
	help     string   // what it does, indented lines
	scoped   bool     // takes --scope
	examples []string // command lines, two to four
}

// commandNames returns the subcommands' names, sorted.
func commandNames() []string {
	return slices.Sorted(maps.Keys(commands))
}

// The usage lines of the subcommands (after "idemctl [global flags]").
const (
	usageInspect      = "inspect KEY"
	usageList         = "list (--stuck [--older-than D] | --corrupt | --uncertain) [--limit N]"
	usageRelease      = "release KEY --token N [--force]"
	usagePurgeCorrupt = "purge-corrupt KEY --confirm DIGEST"
	usageResolve      = "resolve KEY --token N (--applied RESPONSE | --not-applied) [--retention D]"
	usageStats        = "stats"
	usagePurge        = "purge --expired"
)

var commands = map[string]command{
	"inspect": {inspect, usageInspect,
		"  Prints the record of KEY. A record that does not decode exits 4 and shows\n" +
			"  its raw stored fields, why it does not decode and its digest.", true, []string{
			"idemctl --store redis://127.0.0.1:6379/0 inspect order-42",
			"idemctl --store redis://127.0.0.1:6379/0 --scope acme inspect order-42",
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' --json inspect order-42",
		}},
	"list": {list, usageList,
		"  --stuck lists in-progress keys whose lease expired at least D ago (D ≥ 0);\n" +
			"  --corrupt lists keys whose records do not decode, with the reason and digest;\n" +
			"  --uncertain lists uncertain keys with their tokens, for idemctl resolve.\n" +
			"  At most N keys (N ≥ 1, default 1000). With --scope, only that scope's keys.", true, []string{
			"idemctl --store redis://127.0.0.1:6379/0 list --stuck",
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' list --stuck --older-than 5m",
			"idemctl --store redis://127.0.0.1:6379/0 list --corrupt --limit 50",
			"idemctl --store redis://127.0.0.1:6379/0 list --uncertain",
		}},
	"release": {release, usageRelease,
		"  Releases KEY if it is in progress with token N and its lease expired (a live\n" +
			"  lease needs --force); refused (exit 1) otherwise.", true, []string{
			"idemctl --store redis://127.0.0.1:6379/0 inspect order-42        # read its token first",
			"idemctl --store redis://127.0.0.1:6379/0 release order-42 --token 9",
			"idemctl --store redis://127.0.0.1:6379/0 release order-42 --token 9 --force   # a live lease",
		}},
	"resolve": {resolve, usageResolve,
		"  Settles KEY if it is uncertain with token N (its execution may or may not\n" +
			"  have performed its effect; requests for it get 409 operation_uncertain).\n" +
			"  --applied RESPONSE: the effect happened; RESPONSE (a JSON object\n" +
			"  {\"status\":201,\"header\":{...},\"body\":\"...\"}, or @FILE) is stored and\n" +
			"  replayed for the retention D (default 24h). --not-applied: it did not; the\n" +
			"  key is freed and the next request runs as new. Refused (exit 1) unless the\n" +
			"  key is uncertain with token N. One audit line (JSON) goes to stderr.", true, []string{
			"idemctl --store redis://127.0.0.1:6379/0 inspect order-42        # status uncertain, its token",
			`idemctl --store redis://127.0.0.1:6379/0 resolve order-42 --token 9 --applied '{"status":201,"body":"{\"id\":7}"}'`,
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' resolve order-42 --token 9 --not-applied",
		}},
	"purge-corrupt": {purgeCorrupt, usagePurgeCorrupt,
		"  Deletes KEY's record only if it still does not decode and its content still\n" +
			"  has DIGEST (printed by inspect and list --corrupt). Exit 1 if the record\n" +
			"  changed since, 6 if it decodes (never deleted), 3 if it is gone.", true, []string{
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' list --corrupt   # prints each digest",
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' purge-corrupt order-42 --confirm 3f9a…",
		}},
	"stats": {stats, usageStats,
		"  Counts the records per status, the stuck and the corrupt ones, and the storage used.", false, []string{
			"idemctl --store redis://127.0.0.1:6379/0 stats",
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' --json stats | jq .stuck",
		}},
	"purge": {purge, usagePurge,
		"  Deletes expired records now (PostgreSQL; Redis expires its own).", false, []string{
			"idemctl --store 'postgres://postgres@127.0.0.1:5432/test' purge --expired",
			"IDEMCTL_STORE='postgres://postgres@127.0.0.1:5432/test' idemctl purge --expired",
		}},
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
	case errors.Is(err, idem.ErrCorruptRecord):
		return exitCorrupt, fmt.Errorf("%w (idemctl inspect shows its raw fields)", err)
	case errors.Is(err, idem.ErrNotCorrupt):
		return exitNotCorrupt, err
	case errors.Is(err, idem.ErrRecordChanged):
		return exitRefused, err
	}
	return exitBackend, err
}

// usageError is a subcommand's usage error: the flag parser's complaint,
// if any, and the usage line.
func usageError(err error, usage string) (int, error) {
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return exitUsage, fmt.Errorf("%v\nusage: %s", err, usage)
	}
	return exitUsage, errors.New("usage: " + usage)
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
