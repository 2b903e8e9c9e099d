package idem

import (
	"context"
	"time"
)

// Optional store capabilities for operators and for the completer. Like
// Sweeper and Waiter they are separate small interfaces that a Store
// implements or not, found by type assertion.

// Lister is implemented by stores that can enumerate their in-progress
// records whose lease expired: executions whose holder crashed or stalled
// and whose client has not come back (stuck keys).
type Lister interface {
	// ListStuck returns up to limit in-progress records whose lease
	// expired at least olderThan ago by the store's clock (olderThan ≤ 0:
	// any expired lease), in no particular order. limit ≤ 0 means
	// DefaultListLimit. Records that do not decode are skipped, not
	// returned as errors, so that one corrupt record does not hide the
	// others; Get reports them.
	ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*Record, error)
}

// PrefixLister is implemented by stores that can list the stuck records of
// the stored keys that start with a prefix (one tenant's, one run's)
// without reading the others: a completer that owns only part of a shared
// store lists its part alone.
type PrefixLister interface {
	// ListStuckPrefix is ListStuck restricted to the records whose stored
	// key (StorageKey) starts with prefix; an empty prefix lists every
	// stuck record, as ListStuck does.
	ListStuckPrefix(ctx context.Context, prefix string, olderThan time.Duration, limit int) ([]*Record, error)
}

// DefaultListLimit is the number of records ListStuck returns when asked
// for limit ≤ 0.
const DefaultListLimit = 1000

// StoreStats counts the records of a store.
type StoreStats struct {
	// InProgress counts in-progress records; Stuck those of them whose
	// lease has expired.
	InProgress, Stuck int64
	// Completed and Failed count the stored outcomes.
	Completed, Failed int64
	// Corrupt counts records that do not decode.
	Corrupt int64
	// Bytes is the storage the records use as the backend reports it
	// (Redis MEMORY USAGE, PostgreSQL relation size, key and response
	// sizes in memory); an estimate, not an exact figure.
	Bytes int64
}

// Statter is implemented by stores that can count their records.
type Statter interface {
	// Stats counts every record. It reads the whole store: an operator's
	// call, not a hot-path one.
	Stats(ctx context.Context) (StoreStats, error)
}
