package redisstore

import (
	"fmt"
	"time"

	"github.com/idembench/idembench/idem"
)

// Defaults applied to zero fields of Options.
const (
	DefaultPrefix        = "idem"
	DefaultTakeoverGrace = 24 * time.Hour
	DefaultPollInterval  = 100 * time.Millisecond
	DefaultWaitTimeout   = time.Second
)

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// Prefix starts every Redis key and channel the store uses, followed by
	// ':'. Empty means DefaultPrefix ("idem"). It must be printable ASCII
	// without spaces and without '{' or '}' (those would move the hash
	// tag). Stores that share a prefix share records and fencing counters.
	Prefix string

	// TakeoverGrace is how long an in-progress record stays stored after its
	// lease expired, so that a later Acquire still sees it, takes it over
	// and reports the previous token in Lease.PrevToken (the recovery hook
	// runs on that). After lease expiry plus TakeoverGrace the record is
	// deleted by Redis and a new Acquire starts from scratch (with a higher
	// token all the same). Zero means DefaultTakeoverGrace (24h); negative
	// values are rejected by New.
	TakeoverGrace time.Duration

	// PollInterval is the longest WaitChange sleeps between two looks at
	// the record. Notifications normally end the wait earlier; polling is
	// the safety net for lost messages and the only mechanism when
	// DisableNotify is set. Zero means DefaultPollInterval (100ms);
	// negative values are rejected by New.
	PollInterval time.Duration

	// DisableNotify turns off pub/sub: the scripts publish nothing and
	// WaitChange only polls. Use it where PUBLISH/SUBSCRIBE are denied by
	// ACL or a proxy does not support them.
	DisableNotify bool

	// WaitReplicas, when positive, makes every write (an Acquire that
	// claimed or took over the key, Heartbeat, Complete, Fail, Release) wait
	// on the same connection until that many replicas acknowledged it
	// (Redis WAIT numreplicas timeout) before it reports success. A write
	// that fewer replicas acknowledged within WaitTimeout is applied on the
	// primary but returned as an error wrapping ErrNotReplicated, marked
	// idem.MarkAmbiguous: never as success. An Acquire that returns a
	// completed or failed record for a replay waits the same way (after a
	// write that replicates behind the record), since the record may hold a
	// completion whose own WAIT has not succeeded yet. Zero (the default) sends no
	// WAIT and costs nothing. Negative values are rejected by New, and so is
	// a positive value with a client other than *redis.Client (single node
	// or redis.NewFailoverClient) or *redis.ClusterClient. WAIT is best
	// effort: see "Replicas and failover" in the package doc.
	WaitReplicas int

	// WaitTimeout bounds each WAIT. Zero means DefaultWaitTimeout (1s);
	// negative values are rejected by New. Keep it below the client's read
	// timeout (go-redis: 3s by default), or a slow WAIT ends as a client
	// timeout, which is ambiguous too.
	WaitTimeout time.Duration

	// OnCounterBehind, when set, is called by an Acquire that took over a
	// record whose token is not below what its hash slot's fencing counter
	// would issue next: the counter key was lost (deleted, evicted) or
	// restored from an older copy than the record. The take-over still
	// issues a token above prev (the script moves the counter past it in
	// the same atomic step), so fencing holds; the call tells an operator
	// that tokens of this slot may have been issued twice for keys whose
	// records were lost with the counter. counter is the value the script
	// found after its INCR. It runs on the calling goroutine and must not
	// block.
	OnCounterBehind func(key string, counter int64, prev idem.Token)
}

// withDefaults returns o with zero fields set to their defaults, or an error
// naming the first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	for i := 0; i < len(o.Prefix); i++ {
		if c := o.Prefix[i]; c < 0x21 || c > 0x7e || c == '{' || c == '}' {
			return o, fmt.Errorf("redisstore: prefix %q: byte %#02x at offset %d is not allowed", o.Prefix, c, i)
		}
	}
	switch {
	case o.TakeoverGrace == 0:
		o.TakeoverGrace = DefaultTakeoverGrace
	case o.TakeoverGrace < 0:
		return o, fmt.Errorf("redisstore: negative TakeoverGrace %v", o.TakeoverGrace)
	}
	switch {
	case o.PollInterval == 0:
		o.PollInterval = DefaultPollInterval
	case o.PollInterval < 0:
		return o, fmt.Errorf("redisstore: negative PollInterval %v", o.PollInterval)
	}
	switch {
	case o.WaitReplicas < 0:
		return o, fmt.Errorf("redisstore: negative WaitReplicas %d", o.WaitReplicas)
	case o.WaitTimeout < 0:
		return o, fmt.Errorf("redisstore: negative WaitTimeout %v", o.WaitTimeout)
	case o.WaitTimeout == 0:
		o.WaitTimeout = DefaultWaitTimeout
	}
	return o, nil
}

// millis converts d to whole milliseconds for Redis, rounding up so that a
// positive duration never becomes zero.
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
