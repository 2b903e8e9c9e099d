// Package redisstore is an idem.Store on Redis through a go-redis v9
// UniversalClient: the same code serves a single node, a Sentinel-managed
// primary and Redis Cluster. (A *redis.Ring is not supported: it places
// keys by its own hashing, so a record and its slot's fencing counter may
// live on different shards.) Tested with Redis 7.0.
//
//	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
//	store, err := redisstore.New(client, redisstore.Options{})
//	...
//	err = store.CheckConfig(ctx) // maxmemory-policy must be noeviction
//
// # Key layout
//
// For an idempotency key K under Options.Prefix P (default "idem"), with
// E the escaped K ('%', '{' and '}' written as %25, %7B, %7D so that E is a
// valid, injective hash tag):
//
//	P:{E}          hash    the record (fields below); PEXPIREAT as described
//	P:fence:{T}    string  fencing counter of the hash slot of E; no TTL
//	P:{E}:chan     channel notifications of Complete, Fail and Release
//	P:fx:{E'}      hash    FencedSink's last token and value per effect key
//
// The record fields are status ("in_progress", "completed", "failed"), fp
// (fingerprint, hex), token, prev_token, lease_ms and acq_id (written by
// Acquire and kept for diagnosis once finished), response
// (idem.EncodeResponse bytes) and done_id once finished, watch once a
// WaitChange waits on the record, and fp_policy (the fingerprint policy id
// of idem.PolicyStore, written by Acquire, empty when not named; a record
// written before the field existed has none and reads as not named). Times are milliseconds by the Redis
// server's clock (TIME inside the scripts); the client's clock is never
// used. Record.ExpiresAt is the server time plus the key's PTTL, read
// together. TIME is read to the millisecond: rounded down to judge whether
// a lease has expired, rounded up for where a lease granted or renewed now
// starts, so a lease lasts at least its TTL by the server's clock (and a
// take-over comes less than 1 ms after it).
//
// Expiry: an in-progress record expires at lease expiry plus
// Options.TakeoverGrace (default 24h), so that a take-over after a crash is
// still recognised and reports Lease.PrevToken; a completed or failed record
// expires retention after it finished. Redis deletes expired records by
// itself, so the store does not implement idem.Sweeper.
//
// # Scripts
//
// Every transition is one Lua script, run by SHA (EVALSHA, falling back to
// EVAL when the server's script cache lacks it): one round trip, atomic on
// the server, and never a read followed by a separate write. Every script
// touches only keys of one hash slot. Acquire creates a record, takes over
// an in-progress record whose lease expired when the fingerprint is the same
// (new token, PrevToken = old token), or returns the record unchanged.
// Heartbeat, Complete, Fail and Release are fenced: they change the record
// only if it is in progress and carries the caller's token, whether or not
// the lease expired, and otherwise return idem.ErrLeaseLost. Get is one
// script reading HGETALL, TIME and PTTL.
//
// go-redis retries a command whose connection broke, possibly after the
// server ran it. Acquire, Complete and Fail therefore carry a per-call id:
// a script that finds its own id in the record returns what the first run
// returned, so a doubled delivery neither loses a lease nor reports a lost
// one. Heartbeat is naturally repeatable. Release is not: a doubled Release
// reports idem.ErrLeaseLost for a record it did release.
//
// # Fencing tokens
//
// Tokens come from INCR of one counter per Redis Cluster hash slot: for
// slot S (of the key's hash tag E) and counter value n, the token is
// n*16384 + S. It strictly increases per key, since n does, and no two keys
// ever get the same token, since S tells the slots apart. The counter of
// slot S is named with a tag T(S): the smallest decimal number whose CRC16
// (XMODEM, Redis Cluster's key hash) modulo 16384 is S. The table of the
// 16384 tags is computed once per process and is a pure function of the
// hash, so every process and every version of this package uses the same
// counters. Since a key's record and its slot's counter share the slot, both
// live on the same node and move together when a slot is migrated; the
// script is valid in Cluster mode. There are at most 16384 counters; they
// have no TTL, so a token is never issued twice: it strictly increases
// across Release, take-over and record expiry. As a further guard a
// take-over never issues a token at or below the one it replaces, even if
// the counter was lost: the script moves the counter past it in the same
// step and Options.OnCounterBehind reports that it had to.
//
// The assumption behind this: the counters are never deleted. That holds
// while nobody runs FLUSHDB/FLUSHALL or DEL on P:fence:*, the server does not
// evict keys (maxmemory-policy noeviction, see below), and data survives
// restarts (AOF or RDB persistence; a Redis without persistence loses
// records and counters on restart, and tokens start over). Tokens are
// decimal integers in [1, 2^63-1] (idem.MaxToken). Lua numbers are
// doubles, exact only below 2^53, so the scripts keep tokens as strings
// and compare and divide them digit group by digit group; the counter may
// reach 2^49-1, and a counter that would pass it (or that is not a
// positive integer) issues nothing: Acquire fails with ErrFenceCounter.
//
// # Required server configuration
//
// maxmemory-policy must be noeviction: any eviction policy may delete
// records (a completed request would run again) or counters (tokens would
// repeat). With noeviction a full Redis refuses writes instead, and the store
// fails closed with idem.ErrBackend. CheckConfig reports another policy
// (ErrEvictionPolicy) or that it could not check (ErrConfigUnchecked, when
// CONFIG GET is disabled, as on many managed services). Scripts use TIME
// together with writes, which needs effect replication (the default since
// Redis 5). Sharded pub/sub needs Redis 7; older servers get classic
// PUBLISH/SUBSCRIBE.
//
// # Waiting
//
// WaitChange subscribes to the key's channel (SSUBSCRIBE, or SUBSCRIBE
// where the server lacks sharded pub/sub), then looks at the record and
// marks it as watched in one script. Complete, Fail and Release publish on
// the channel (SPUBLISH, or PUBLISH) when the record is marked, so requests
// nobody waits for cost no publish. Since the subscription exists before
// the mark, no change is missed; WaitChange also polls every
// Options.PollInterval as a safety net and returns when the lease expires
// by the server clock. Each waiting call holds a pub/sub connection of its
// own for as long as it waits.
//
// # Limits
//
// Keys are idem keys (at most idem.MaxKeyLen bytes of printable ASCII);
// escaping makes a Redis key at most three times as long plus the prefix.
// Responses are stored as one hash field: Redis caps a value at 512 MB, and
// the engine's own size cap (idem.DefaultMaxResponseSize, 1 MiB) applies
// first. Lease TTLs and retention are whole milliseconds (rounded up) and
// must be positive.
//
// # Errors
//
// Failures to reach Redis are returned as idem.BackendError (fail closed:
// the engine never treats an unreachable store as an absent key). A write
// that failed after its command may have reached the server (timeout,
// reset, cancelled context) is also marked idem.MarkAmbiguous. A context
// already done before the call returns ctx.Err(). A key holding anything
// other than a valid record (wrong type, missing or garbage fields, a
// response that does not decode) returns an error wrapping
// idem.ErrCorruptRecord naming the key and field; it is never read as
// absent and never causes a panic.
//
// # Fail closed on every stored byte
//
// A record that does not decode exactly as the Go decoder (decodeRecord)
// would decode it is never taken over, never replayed and never
// overwritten; the call fails closed with idem.ErrCorruptRecord. The rule
// is enforced in the scripts themselves, which judge a record by the same
// rules before they write (luaRecord): status one of the four states;
// fp 64 lowercase hex digits; token, lease_ms and a non-zero prev_token in
// the canonical decimal form (digits only, no sign, no leading zero, in
// [1, 2^63-1]; "0x10", "5.5", "1e3", "inf", "+5" and " 5" are corrupt
// although Lua's tonumber reads them); prev_token below token; fp_policy,
// when present, at most 128 bytes of 0x21..0x7E; an
// in-progress record has a lease and no response; a finished (completed,
// failed or uncertain) record has a
// response. Only the response's encoding is beyond the scripts: a fenced
// write never changes a finished record anyway, and when one is refused
// the store reads the key again and reports ErrCorruptRecord rather than
// idem.ErrLeaseLost if the record does not decode. Unknown fields are
// ignored by both. TestPlantedRecords holds the store to this rule with
// random mutations of every field (pgregory.net/rapid).
//
// An operator finds corrupt keys with "idemctl list --corrupt", sees their
// raw fields with "idemctl inspect", and removes one with "idemctl
// purge-corrupt", which deletes the key only if it is still byte for byte
// what was inspected.
//
// # Guarantees
//
// With noeviction, persistence and no writes to the store's keys by others:
// at most one holder owns a key at a time by the server's clock; a holder
// whose lease was taken over cannot complete, fail, release or renew it;
// tokens per key strictly increase; a completed or failed response is kept
// byte for byte for its retention.
//
// # Replicas and failover
//
// Redis replication is asynchronous: a failover (Sentinel, or a Cluster
// replica taking over) may lose the last writes the old primary
// acknowledged. A lost completion is a request that runs again; a lost
// claim is a key two callers hold at once; a lost counter increment is a
// fencing token issued twice. Options.WaitReplicas sends WAIT numreplicas
// timeout on the write's own connection after every write, and reports a
// write that too few replicas acknowledged as ambiguous (ErrNotReplicated),
// never as success. WAIT is best effort, not a consensus: the replica that
// acknowledged must be the one promoted (Sentinel and Cluster prefer the
// replica with the largest replication offset, but Sentinel ranks
// replica-priority first), a replica acknowledges a write it holds in
// memory only, and a write that timed out is not rolled back on the
// primary. A Get may see a write whose WAIT has not returned yet; an
// Acquire that returns a completed or failed record for a replay first
// makes a write that replicates behind it and waits for that, so a replay
// never acknowledges a completion a failover can still lose. The measured
// figures are in the repository's README ("Running the store with
// replicas").
//
// Clients that follow a failover: redis.NewFailoverClient (Sentinel) does.
// A redis.ClusterClient of go-redis v9.23 reloads its slot map on MOVED but
// not when a dial to the dead primary fails, and was seen to keep failing
// for more than 20 seconds after the replica took over; give it a Dialer
// that calls ReloadState when a dial fails (as chaos/servers'
// RedisCluster.NewClient does).
package redisstore
