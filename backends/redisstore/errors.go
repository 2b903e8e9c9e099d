package redisstore

import (
	"errors"
	"fmt"
	"net"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// Errors of this package beyond the idem sentinels.
var (
	// ErrEvictionPolicy is returned by CheckConfig when a server runs with a
	// maxmemory-policy other than noeviction: Redis may then delete records
	// and fencing counters under memory pressure, and tokens could repeat.
	ErrEvictionPolicy = errors.New("redisstore: maxmemory-policy is not noeviction")
	// ErrConfigUnchecked is returned by CheckConfig when the server refused
	// CONFIG GET (disabled or denied, as on many managed services): the
	// policy could not be checked and must be verified another way.
	ErrConfigUnchecked = errors.New("redisstore: could not check the server configuration")
	// ErrNotReplicated is wrapped by a write that the primary applied but
	// fewer than Options.WaitReplicas replicas acknowledged within
	// Options.WaitTimeout. Such an error is also idem.Ambiguous: a failover
	// may or may not lose the write.
	ErrNotReplicated = errors.New("redisstore: write not acknowledged by enough replicas")
	// ErrFenceCounter is wrapped, together with idem.ErrCorruptRecord, by an
	// Acquire whose hash slot's fencing counter can issue no valid token: it
	// holds a value that is not a positive integer, or its next token would
	// pass idem.MaxToken. Acquire then writes no record. An operator
	// repairs the counter key named in the message.
	ErrFenceCounter = errors.New("redisstore: fencing counter issues no valid token")
)

// storeError turns an error from the Redis client into the store's error
// contract: ErrBackend always, and idem.MarkAmbiguous when op wrote and the
// command may have reached the server. The context error stays reachable
// with errors.Is.
func storeError(op string, err error, write bool) error {
	if err == nil {
		return nil
	}
	e := idem.BackendError(op, err)
	if write && mayHaveApplied(err) {
		return idem.MarkAmbiguous(e)
	}
	return e
}

// mayHaveApplied reports whether a failed command may still have been
// executed by the server. Only failures that prove the command never left
// (no connection could be made or taken from the pool, client closed) or
// that the server answered with an error reply (scripts here never fail
// after a write) are definite; timeouts, resets, EOF and cancellation after
// the command was written are not.
func mayHaveApplied(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return false
	}
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return true
}

// corrupt returns an error wrapping idem.ErrCorruptRecord for key.
func corrupt(key, format string, args ...any) error {
	return fmt.Errorf("redisstore: key %q: %w: %s", key, idem.ErrCorruptRecord, fmt.Sprintf(format, args...))
}

// inField prefixes an error that already wraps idem.ErrCorruptRecord with
// key and the hash field it is about.
func inField(key, field string, err error) error {
	return fmt.Errorf("redisstore: key %q: field %q: %w", key, field, err)
}
