package idem

import (
	"context"
	"errors"
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

// ListLimit is how many records a listing asked for limit returns at most:
// limit, or DefaultListLimit when limit ≤ 0. Stores apply the rule of
// ListStuck, ListStuckPrefix and ListCorrupt with it.
func ListLimit(limit int) int {
	if limit <= 0 {
		return DefaultListLimit
	}
	return limit
}

// StoreStats counts the records of a store.
type StoreStats struct {
	// InProgress counts in-progress records; Stuck those of them whose
	// lease has expired.
	InProgress, Stuck int64
	// Completed and Failed count the stored outcomes; Uncertain the
	// outcomes waiting for an operator's resolution.
	Completed, Failed, Uncertain int64
	// Corrupt counts records that do not decode.
	Corrupt int64
	// Bytes is the storage the records use as the backend reports it
	// (Redis MEMORY USAGE, PostgreSQL relation size, key and response
	// sizes in memory); an estimate, not an exact figure.
	Bytes int64
}

// Add counts rec, a record that decoded, read at now by the store's clock:
// InProgress (and Stuck when its lease has expired), Completed, Failed or
// Uncertain.
// Corrupt and Bytes are the caller's to count.
func (s *StoreStats) Add(rec *Record, now time.Time) {
	switch rec.Status {
	case StatusInProgress:
		s.InProgress++
		if !now.Before(rec.LeaseExpiry) {
			s.Stuck++
		}
	case StatusCompleted:
		s.Completed++
	case StatusFailed:
		s.Failed++
	case StatusUncertain:
		s.Uncertain++
	}
}

// Statter is implemented by stores that can count their records.
type Statter interface {
	// Stats counts every record. It reads the whole store: an operator's
	// call, not a hot-path one.
	Stats(ctx context.Context) (StoreStats, error)
}

// CorruptRecord is the raw content of a stored record that does not decode
// (Get returns ErrCorruptRecord for its key), as an operator inspects it
// before deciding to delete it.
type CorruptRecord struct {
	// Key is the stored key (StorageKey) of the record.
	Key string
	// Reason is why the record does not decode: the text of the error
	// wrapping ErrCorruptRecord.
	Reason string
	// Type is the kind of value the backend holds: the Redis type of the
	// key ("hash", "string", "list", ...), or "row" for PostgreSQL.
	Type string
	// Fields are the stored fields in a stable order: the fields of a Redis
	// hash sorted by name, the elements of a Redis list, set or sorted set,
	// the columns of a PostgreSQL row in table order. A store may leave
	// fields out of a value that cannot be a record (a long list); More
	// counts them.
	Fields []RawField
	// More is the number of fields left out of Fields.
	More int
	// Digest identifies the whole stored content (every field, those left
	// out included), as computed by the server. The same content gives the
	// same digest; CorruptPurger deletes a record only while its content
	// still has the digest the operator saw.
	Digest string
}

// RawField is one stored field of a CorruptRecord.
type RawField struct {
	// Name is the field, column or element name ("[3]" for the fourth
	// element of a list).
	Name string
	// Value is the stored bytes, as the backend holds them; a time column
	// is its RFC 3339 text (or "infinity").
	Value []byte
	// Null is set for an SQL NULL (Value is then nil).
	Null bool
}

// CorruptLister is implemented by stores that can find the records that do
// not decode and show their raw content. The memory store does not
// implement it: it only holds records it built itself, which always decode.
type CorruptLister interface {
	// ListCorrupt returns up to limit records whose stored key starts with
	// prefix ("" for all) and that do not decode, in no particular order.
	// limit ≤ 0 means DefaultListLimit. A record counts as corrupt exactly
	// when Get would return ErrCorruptRecord for it. It reads every record:
	// an operator's call.
	ListCorrupt(ctx context.Context, prefix string, limit int) ([]*CorruptRecord, error)
	// GetCorrupt returns the raw content of key's record when it does not
	// decode. An absent record returns an error wrapping ErrNotFound, one
	// that decodes an error wrapping ErrNotCorrupt.
	GetCorrupt(ctx context.Context, key string) (*CorruptRecord, error)
}

// CorruptPurger is implemented by stores that can delete a record that does
// not decode, fenced by the digest of its content.
type CorruptPurger interface {
	// PurgeCorrupt deletes key's record only if it does not decode and its
	// stored content still has digest (CorruptRecord.Digest): the server
	// compares the content and deletes it in one atomic step, so a record
	// that was rewritten meanwhile is never deleted. A record that decodes
	// returns an error wrapping ErrNotCorrupt, one whose content changed
	// ErrRecordChanged, an absent one ErrNotFound; none of them deletes
	// anything. Deleting a record does not reset the key's fencing tokens.
	PurgeCorrupt(ctx context.Context, key, digest string) error
}

// Errors of CorruptLister and CorruptPurger.
var (
	// ErrNotCorrupt reports that a record decodes: it is not corrupt, and
	// PurgeCorrupt never deletes it.
	ErrNotCorrupt = errors.New("idem: record is not corrupt")
	// ErrRecordChanged reports that a record's content no longer has the
	// digest the caller saw.
	ErrRecordChanged = errors.New("idem: record changed since it was read")
)

// UncertainLister is implemented by stores that list their uncertain
// records, for an operator to resolve (idemctl list --uncertain).
type UncertainLister interface {
	// ListUncertain returns up to limit uncertain records whose stored key
	// starts with prefix ("" for every key), in no particular order.
	// limit ≤ 0 means DefaultListLimit. Records that do not decode are
	// skipped, as ListStuck skips them; Get reports them.
	ListUncertain(ctx context.Context, prefix string, limit int) ([]*Record, error)
}
