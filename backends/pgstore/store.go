package pgstore

import (
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/idem"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultTable         = "idem_keys"
	DefaultTakeoverGrace = 24 * time.Hour
	DefaultSweepBatch    = 1000
	DefaultSweepInterval = time.Minute
	DefaultPollInterval  = 50 * time.Millisecond
)

// identRE is what Table and Schema must match: lower-case, unquoted-style
// PostgreSQL identifiers short enough that the derived names (Table plus
// "_token_seq", "_expires_at_idx", "_fence") stay within PostgreSQL's 63-byte
// limit.
var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// Options configures a Store. The zero value is valid: every zero field takes
// the default stated on it.
type Options struct {
	// Table is the records table. Default "idem_keys". It must match
	// ^[a-z_][a-z0-9_]{0,39}$; the token sequence is Table+"_token_seq", the
	// expiry index Table+"_expires_at_idx" and the fenced-effect ledger
	// Table+"_fence". All are quoted with pgx.Identifier.Sanitize.
	Table string
	// Schema qualifies the table, sequence and ledger. Default "": the
	// connection's search_path decides. Same rule as Table.
	Schema string
	// TakeoverGrace is how long an in-progress record stays after its lease
	// expired, so that a later Acquire is still a take-over (Lease.PrevToken
	// set) rather than a fresh claim. Default 24h. After it the record is
	// absent. Negative is an error.
	TakeoverGrace time.Duration
	// SweepBatch is the most rows one sweep statement deletes. Default 1000.
	SweepBatch int
	// SweepInterval is the period of StartSweeper. Default one minute.
	SweepInterval time.Duration
	// OnSweepError receives the errors of the background sweeper started by
	// StartSweeper. Nil drops them; the next tick tries again.
	OnSweepError func(error)
	// PollInterval is the longest WaitChange sleeps between two reads of the
	// record. Default 50ms. WaitChange also wakes up when the lease it
	// watches expires, whichever comes first.
	PollInterval time.Duration
}

// Store is an idem.Store on PostgreSQL. It is safe for concurrent use; it
// does not own the pool and never closes it.
type Store struct {
	pool *pgxpool.Pool
	opts Options

	table  string // sanitized, possibly schema-qualified
	seq    string // sanitized, possibly schema-qualified
	ledger string // sanitized, possibly schema-qualified
	index  string // sanitized, unqualified (an index lives in its table's schema)

	sql statements
}

// Every capability the store has, in one place.
var (
	_ idem.Store           = (*Store)(nil)
	_ idem.Sweeper         = (*Store)(nil)
	_ idem.Waiter          = (*Store)(nil)
	_ idem.BatchStore      = (*Store)(nil)
	_ idem.PoolSizer       = (*Store)(nil)
	_ idem.Lister          = (*Store)(nil)
	_ idem.UncertainLister = (*Store)(nil)
	_ idem.PrefixLister    = (*Store)(nil)
	_ idem.Statter         = (*Store)(nil)
	_ idem.CorruptLister   = (*Store)(nil)
	_ idem.CorruptPurger   = (*Store)(nil)
)

// New returns a Store that keeps its records in opts.Table on pool. It does
// not touch the database: call Migrate once to create the schema. New fails
// only on invalid options (a nil pool, a bad identifier, a negative
// duration or batch).
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("pgstore: nil pool")
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if !identRE.MatchString(opts.Table) {
		return nil, fmt.Errorf("pgstore: table name %q does not match %s", opts.Table, identRE)
	}
	if opts.Schema != "" && !identRE.MatchString(opts.Schema) {
		return nil, fmt.Errorf("pgstore: schema name %q does not match %s", opts.Schema, identRE)
	}
	switch {
	case opts.TakeoverGrace < 0:
		return nil, fmt.Errorf("pgstore: negative take-over grace %v", opts.TakeoverGrace)
	case opts.SweepBatch < 0:
		return nil, fmt.Errorf("pgstore: negative sweep batch %d", opts.SweepBatch)
	case opts.SweepInterval < 0:
		return nil, fmt.Errorf("pgstore: negative sweep interval %v", opts.SweepInterval)
	case opts.PollInterval < 0:
		return nil, fmt.Errorf("pgstore: negative poll interval %v", opts.PollInterval)
	}
	if opts.TakeoverGrace == 0 {
		opts.TakeoverGrace = DefaultTakeoverGrace
	}
	if opts.SweepBatch == 0 {
		opts.SweepBatch = DefaultSweepBatch
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	name := func(n string) string {
		if opts.Schema == "" {
			return pgx.Identifier{n}.Sanitize()
		}
		return pgx.Identifier{opts.Schema, n}.Sanitize()
	}
	s := &Store{
		pool:   pool,
		opts:   opts,
		table:  name(opts.Table),
		seq:    name(opts.Table + "_token_seq"),
		ledger: name(opts.Table + "_fence"),
		index:  pgx.Identifier{opts.Table + "_expires_at_idx"}.Sanitize(),
	}
	s.sql = buildStatements(s.table, s.seq, s.ledger)
	return s, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// PoolSize implements idem.PoolSizer: the pool's MaxConns.
func (s *Store) PoolSize() int { return int(s.pool.Config().MaxConns) }
