package redisstore

import "github.com/redis/go-redis/v9"

// Script results. Every transition script returns a table whose first
// element is one of these.
const (
	resultCorrupt = -1 // the key holds something that is not a valid record
	resultRefused = 0  // acquire: record returned; fenced write: lease lost
	resultApplied = 1  // the transition happened
)

// Record hash fields. Times are milliseconds since the Unix epoch by the
// Redis server's clock; tokens are decimal.
const (
	fieldStatus   = "status"     // "in_progress", "completed" or "failed"
	fieldFP       = "fp"         // fingerprint, 64 hex digits
	fieldToken    = "token"      // fencing token of the owner
	fieldPrev     = "prev_token" // in progress: token taken over, "0" if none
	fieldLease    = "lease_ms"   // in progress: lease expiry
	fieldExpires  = "expires_ms" // when Redis deletes the record (PEXPIREAT)
	fieldResponse = "response"   // completed/failed: idem.EncodeResponse bytes
	fieldAcqID    = "acq_id"     // in progress: id of the Acquire call
	fieldDoneID   = "done_id"    // completed/failed: id of the Complete/Fail call
)

// luaPrelude holds the helpers every transition script starts with.
//
// now() reads the server clock, never the client's. fmt() renders an
// integer exactly (Lua's default number format switches to exponent form
// above 1e14). corrupt(key) tells whether key holds something other than a
// record hash. notify() publishes on the key's channel with sharded pub/sub
// when the server has it (Redis 7), else with classic PUBLISH; an empty
// channel means notifications are off.
const luaPrelude = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format('%d', n) end
local function notify(ch, msg)
  if ch == '' then return end
  local r = redis.pcall('SPUBLISH', ch, msg)
  if type(r) == 'table' and r.err then redis.call('PUBLISH', ch, msg) end
end
`

// acquireScript claims a key, takes over an expired lease, or returns the
// record unchanged.
//
// KEYS: record, fence counter. ARGV: fingerprint, lease TTL ms, take-over
// grace ms, acquire call id, hash slot.
// Returns {1, token, prev token, lease expiry ms} for a lease,
// {0, HGETALL} for an existing record, {-1, type} for a key of another type.
//
// A record whose acq_id equals this call's id was written by this very call
// and delivered again by a client-side retry: the same lease is returned.
// Only a well-formed in-progress record is taken over; anything else is
// returned for the caller to decode (and report as corrupt). The token is
// counter*16384 + slot: increasing with the slot's counter, and unique
// across slots. The counter is never decremented and never expires; the
// guard after INCR keeps the token above the one taken over even if the
// counter was lost.
var acquireScript = redis.NewScript(luaPrelude + `
local ty = redis.call('TYPE', KEYS[1])['ok']
if ty ~= 'none' and ty ~= 'hash' then return {-1, ty} end
local t = now()
local prev = 0
if ty == 'hash' then
  local f = redis.call('HMGET', KEYS[1], 'status', 'fp', 'token', 'lease_ms', 'acq_id', 'prev_token',
    'expires_ms', 'response')
  local tok, lease = tonumber(f[3]), tonumber(f[4])
  if f[1] == 'in_progress' and tok and tok > 0 and lease and tonumber(f[7]) and not f[8] then
    if f[5] == ARGV[4] then return {1, tok, tonumber(f[6]) or 0, lease} end
    if f[2] == ARGV[1] and lease <= t then prev = tok end
  end
  if prev == 0 then return {0, redis.call('HGETALL', KEYS[1])} end
end
local slot = tonumber(ARGV[5])
local tok = redis.call('INCR', KEYS[2]) * 16384 + slot
if tok <= prev then
  local n = math.floor(prev / 16384) + 1
  tok = n * 16384 + slot
  redis.call('SET', KEYS[2], fmt(n))
end
local lease = t + tonumber(ARGV[2])
local exp = lease + tonumber(ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', 'in_progress', 'fp', ARGV[1], 'token', fmt(tok),
  'prev_token', fmt(prev), 'lease_ms', fmt(lease), 'expires_ms', fmt(exp), 'acq_id', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], exp)
return {1, tok, prev, lease}
`)

// luaOwned is the fencing check shared by the fenced scripts: it sets st to
// the record's status and returns early with -1 (not a record) or 0 (lease
// lost) unless the record is in progress with the token in ARGV[1]. A record
// that is absent counts as lease lost.
const luaOwned = `
local ty = redis.call('TYPE', KEYS[1])['ok']
if ty == 'none' then return {0} end
if ty ~= 'hash' then return {-1} end
local f = redis.call('HMGET', KEYS[1], 'status', 'token', 'done_id', 'expires_ms')
local st = f[1]
if not (st == 'in_progress' or st == 'completed' or st == 'failed') or not tonumber(f[2]) then
  return {-1}
end
local owned = st == 'in_progress' and f[2] == ARGV[1]
`

// heartbeatScript extends a lease.
//
// KEYS: record. ARGV: token, lease TTL ms, take-over grace ms.
// Returns {1, lease expiry ms}, {0} (lease lost) or {-1} (corrupt).
var heartbeatScript = redis.NewScript(luaPrelude + luaOwned + `
if not owned then return {0} end
local lease = now() + tonumber(ARGV[2])
local exp = lease + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'lease_ms', fmt(lease), 'expires_ms', fmt(exp))
redis.call('PEXPIREAT', KEYS[1], exp)
return {1, lease}
`)

// finishScript completes or fails an execution: it stores the response and
// the final status and publishes the change.
//
// KEYS: record. ARGV: token, final status, encoded response, retention ms,
// finish call id, channel.
// Returns {1, expiry ms}, {0} (lease lost) or {-1} (corrupt).
//
// A record already finished with this token, status and call id was written
// by this very call and delivered again by a client-side retry: success.
var finishScript = redis.NewScript(luaPrelude + luaOwned + `
if not owned then
  if st == ARGV[2] and f[2] == ARGV[1] and f[3] == ARGV[5] then
    return {1, tonumber(f[4]) or 0}
  end
  return {0}
end
local exp = now() + tonumber(ARGV[4])
redis.call('HDEL', KEYS[1], 'lease_ms', 'prev_token', 'acq_id')
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'response', ARGV[3], 'expires_ms', fmt(exp), 'done_id', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], exp)
notify(ARGV[6], ARGV[2])
return {1, exp}
`)

// releaseScript deletes an in-progress record so the request can be retried.
// The fencing counter is untouched.
//
// KEYS: record. ARGV: token, channel.
// Returns {1}, {0} (lease lost) or {-1} (corrupt).
var releaseScript = redis.NewScript(luaPrelude + luaOwned + `
if not owned then return {0} end
redis.call('DEL', KEYS[1])
notify(ARGV[2], 'released')
return {1}
`)

// probeScript is the read WaitChange uses: whether the record is still the
// in-progress one it waits for, and how long its lease has left.
//
// KEYS: record. Returns {status, token, lease ms left}, with empty strings
// for an absent record or a key of another type.
var probeScript = redis.NewScript(luaPrelude + `
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return {'', '', 0} end
local f = redis.call('HMGET', KEYS[1], 'status', 'token', 'lease_ms')
return {f[1] or '', f[2] or '', (tonumber(f[3]) or 0) - now()}
`)
