package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
)

// cleanCmd is `idembench clean`.
type cleanCmd struct {
	Backends    []string      `help:"Servers to clean: redis, postgres." default:"redis,postgres" enum:"redis,postgres"`
	OlderThan   time.Duration `help:"Delete the data of runs that started longer ago than this." placeholder:"DURATION"`
	All         bool          `help:"Delete the data of every run."`
	DryRun      bool          `help:"Only say what would be deleted." name:"dry-run"`
	RedisURL    string        `help:"Redis URL (default: $IDEM_REDIS_URL, else redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL string        `help:"PostgreSQL URL (default: $IDEM_POSTGRES_URL, else the docker-compose.yml server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
}

func (c *cleanCmd) Run(ctx context.Context, std stdio, g *globals) error {
	if c.All == (c.OlderThan > 0) {
		return usage("clean: give exactly one of --all and --older-than (a positive duration)")
	}
	o := engines.PurgeOptions{DryRun: c.DryRun}
	if c.OlderThan > 0 {
		o.Before = time.Now().Add(-c.OlderThan)
	}
	text := textOut(std, g)
	verb := map[bool]string{true: "would delete", false: "deleted"}[c.DryRun]
	for _, b := range c.Backends {
		u := resolveBackendURL(b, c.RedisURL, c.PostgresURL)
		p, err := engines.Purge(ctx, harness.Backend(b), u.url, o)
		if err != nil {
			return withBackendHint(harness.EnvironmentError(err), b, u)
		}
		unit := map[string]string{"redis": "keys", "postgres": "rows"}[b]
		fmt.Fprintf(text, "%s: %s %d %s of %d runs%s\n", b, verb, p.Items, unit, len(p.Runs), runList(p.Runs))
	}
	if !c.DryRun {
		sweepStale()
	}
	return nil
}

// runList shows up to five run prefixes.
func runList(runs []string) string {
	if len(runs) == 0 {
		return ""
	}
	if len(runs) > 5 {
		return " (" + strings.Join(runs[:5], ", ") + ", …)"
	}
	return " (" + strings.Join(runs, ", ") + ")"
}

// sweepStale removes the temporary directories of earlier idembench
// processes that were killed (private servers); errors
// are ignored: what cannot be removed now is tried again next time.
func sweepStale() {
	_ = servers.SweepStale()
}

// Help is the detailed help of `idembench clean --help`, with examples.
func (c *cleanCmd) Help() string {
	return `Deletes what earlier runs left on Redis and PostgreSQL: the records of
the reference engine and the effect ledgers of the backend sinks, selected
by the per-run key prefix (r<start>-<seed>). A run deletes its own data at
its end unless --keep-data was given, so this is for kept runs and runs
that were interrupted or killed. Kept by design: the per-slot fence
counters on Redis (idembench:fence:{slot}) and the token sequence on
PostgreSQL, because a fencing token must never repeat. It also removes the
temporary directories of killed idembench processes.

Examples:

    idembench clean --all --dry-run          # what would go
    idembench clean --older-than 24h         # runs started more than a day ago
    idembench clean --all --backends redis

` + exitHelp(exitOK, exitUsage, exitEnvironment, exitInterrupted)
}
