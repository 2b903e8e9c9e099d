package redisstore

import "github.com/redis/go-redis/v9"

// Script results: the first element of the table acquireScript and
// getScript return, and the whole reply of the fenced scripts (a plain
// integer is cheaper for Redis to return than a table), where any value of
// at least resultApplied means applied.
const (
	resultCorrupt = -1 // the key holds something that is not a valid record
	resultRefused = 0  // acquire: record returned; fenced write: lease lost
	resultApplied = 1  // the transition happened
)

// Record hash fields. Times are milliseconds since the Unix epoch by the
// Redis server's clock; tokens are decimal. When Redis deletes the record is
// the key's own expiry (PEXPIREAT/PEXPIRE), read back with PTTL.
const (
	fieldStatus   = "status"     // "in_progress", "completed" or "failed"
	fieldFP       = "fp"         // fingerprint, 64 hex digits
	fieldToken    = "token"      // fencing token of the owner
	fieldPrev     = "prev_token" // token taken over, "0" if none
	fieldLease    = "lease_ms"   // lease expiry (meaningful while in progress)
	fieldAcqID    = "acq_id"     // id of the Acquire call that wrote the lease
	fieldResponse = "response"   // completed/failed: idem.EncodeResponse bytes
	fieldDoneID   = "done_id"    // completed/failed: id of the Complete/Fail call
	fieldWatch    = "watch"      // present once a WaitChange subscribed
)

// Every redis.call inside a script costs about a microsecond of server time
// on top of the command itself, and the transition scripts run on every
// request, so they make as few calls as the semantics allow: an absent key
// costs TYPE, TIME, INCR, HSET and PEXPIREAT to acquire, and a completion
// HMGET, HSET and PEXPIRE.

// luaClock holds the helpers of the scripts that read the time: now()
// reads the server clock, never the client's; fmt() renders an integer
// exactly (Lua's default number format switches to exponent form above
// 1e14).
const luaClock = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format('%d', n) end
`

// luaNotify returns the statements that publish msg (a Lua expression) on
// the record's channel (KEYS[1] plus channelSuffix, same hash slot) with
// sharded pub/sub when the server has it (Redis 7), else with classic
// PUBLISH. They are inlined where needed rather than defined as a function
// in every script, which would build a closure on every call.
func luaNotify(msg string) string {
	return `
  local ch = KEYS[1] .. '` + channelSuffix + `'
  local r = redis.pcall('SPUBLISH', ch, ` + msg + `)
  if type(r) == 'table' and r.err then redis.call('PUBLISH', ch, ` + msg + `) end
`
}

// acquireScript claims a key, takes over an expired lease, or returns the
// record unchanged.
//
// KEYS: record, fence counter. ARGV: fingerprint, lease TTL ms, take-over
// grace ms, acquire call id, hash slot.
// Returns {1, token, prev token, lease expiry ms} for a lease,
// {0, HGETALL, now ms, PTTL} for an existing record, {-1, type} for a key of
// another type.
//
// A record whose acq_id equals this call's id was written by this very call
// and delivered again by a client-side retry: the same lease is returned.
// Only a well-formed in-progress record is taken over; anything else is
// returned for the caller to decode (and report as corrupt). A take-over
// overwrites every field an in-progress record has, so no DEL is needed.
// The token is counter*16384 + slot: increasing with the slot's counter,
// and unique across slots. The counter is never decremented and never
// expires; the guard after INCR keeps the token above the one taken over
// even if the counter was lost.
var acquireScript = redis.NewScript(luaClock + luaClaim + acquireBody)

// luaClaim defines claim(), the write of a new lease, shared by
// acquireScript and its multi-key form: it draws the token from the slot's
// counter (kept above prev), writes the in-progress record with its lease
// (leaseS, decimal ms) and sets the key to expire at expiry (ms), and
// returns the token. The fields are all those an in-progress record has,
// so a take-over needs no DEL.
const luaClaim = `
local function claim(rec, fence, fp, slot, prev, leaseS, expiry, id)
  local tok = redis.call('INCR', fence) * 16384 + slot
  if tok <= prev then
    local n = math.floor(prev / 16384) + 1
    tok = n * 16384 + slot
    redis.call('SET', fence, fmt(n))
  end
  redis.call('HSET', rec, 'status', 'in_progress', 'fp', fp, 'token', fmt(tok),
    'prev_token', fmt(prev), 'lease_ms', leaseS, 'acq_id', id)
  redis.call('PEXPIREAT', rec, expiry)
  return tok
end
`

// acquireBody is acquireScript without the clock helpers and claim().
const acquireBody = `
local ty = redis.call('TYPE', KEYS[1])['ok']
if ty ~= 'none' and ty ~= 'hash' then return {-1, ty} end
local t = now()
local prev = 0
if ty == 'hash' then
  local f = redis.call('HMGET', KEYS[1], 'status', 'fp', 'token', 'lease_ms', 'acq_id', 'prev_token', 'response')
  local tok, lease = tonumber(f[3]), tonumber(f[4])
  if f[1] == 'in_progress' and tok and tok > 0 and lease and not f[7] then
    if f[5] == ARGV[4] then return {1, tok, tonumber(f[6]) or 0, lease} end
    if f[2] == ARGV[1] and lease <= t then prev = tok end
  end
  if prev == 0 then return {0, redis.call('HGETALL', KEYS[1]), t, redis.call('PTTL', KEYS[1])} end
end
local lease = t + tonumber(ARGV[2])
local tok = claim(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[5]), prev, fmt(lease), lease + tonumber(ARGV[3]), ARGV[4])
return {1, tok, prev, lease}
`

// luaOwned is the fencing check shared by the fenced scripts: it reads the
// record into f = {status, token, watch} (st = f[1]) and sets owned when the
// record is in progress with the token in ARGV[1], the common case, which
// costs one HMGET and two comparisons. Otherwise it returns early with -1
// (not a record) or 0 (absent: lease lost), running EXISTS only when HMGET
// found no status, or falls through to the script's own handling of a
// record it does not own. On a key of another type HMGET fails the script
// with WRONGTYPE before anything was written (redis.call, not the slower
// redis.pcall).
const luaOwned = `
local f = redis.call('HMGET', KEYS[1], 'status', 'token', 'watch')
local st = f[1]
local owned = st == 'in_progress' and f[2] == ARGV[1]
if not owned then
  if not st then
    if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
    return 0
  end
  if not (st == 'in_progress' or st == 'completed' or st == 'failed') or not tonumber(f[2]) then
    return -1
  end
end
`

// heartbeatScript extends a lease.
//
// KEYS: record. ARGV: token, lease TTL ms, take-over grace ms.
// Returns the new lease expiry ms, 0 (lease lost) or -1 (corrupt), or fails
// with WRONGTYPE.
var heartbeatScript = redis.NewScript(luaClock + luaOwned + `
if not owned then return 0 end
local lease = now() + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease_ms', fmt(lease))
redis.call('PEXPIREAT', KEYS[1], lease + tonumber(ARGV[3]))
return lease
`)

// finishScript completes or fails an execution: it stores the response and
// the final status, sets the retention, and wakes waiters.
//
// KEYS: record. ARGV: token, final status, encoded response, retention ms,
// finish call id.
// Returns 1, 0 (lease lost) or -1 (corrupt), or fails with WRONGTYPE.
//
// A record already finished with this token, status and call id was written
// by this very call and delivered again by a client-side retry: success.
// The lease fields stay in the record for diagnosis; readers ignore
// lease_ms once the record is finished. It publishes only when a waiter
// marked the record (see probeScript).
var finishScript = redis.NewScript(finishBody)

// finishBody is finishScript's source.
var finishBody = luaOwned + `
if not owned then
  if st == ARGV[2] and f[2] == ARGV[1] and redis.call('HGET', KEYS[1], 'done_id') == ARGV[5] then
    return 1
  end
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'response', ARGV[3], 'done_id', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if f[3] then` + luaNotify("ARGV[2]") + `end
return 1
`

// releaseScript deletes an in-progress record so the request can be retried,
// and wakes waiters. The fencing counter is untouched.
//
// KEYS: record. ARGV: token.
// Returns 1, 0 (lease lost) or -1 (corrupt), or fails with WRONGTYPE.
var releaseScript = redis.NewScript(releaseBody)

// releaseBody is releaseScript's source.
var releaseBody = luaOwned + `
if not owned then return 0 end
redis.call('DEL', KEYS[1])
if f[3] then` + luaNotify("'released'") + `end
return 1
`

// getScript reads a record with the server time and its remaining TTL, from
// which the record's ExpiresAt is computed.
//
// KEYS: record. Returns {1, HGETALL, now ms, PTTL} or {-1} for a key of
// another type.
var getScript = redis.NewScript(luaClock + `
local h = redis.pcall('HGETALL', KEYS[1])
if h.err then return {-1} end
if #h == 0 then return {1, h, 0, -2} end
return {1, h, now(), redis.call('PTTL', KEYS[1])}
`)

// probeScript is WaitChange's look at the record: whether it is still the
// in-progress one it waits for, and how long its lease has left. With
// ARGV[1] = '1' it also marks the record (field watch), so that the
// scripts that finish or release it publish; since the mark and the
// finishing script are atomic and the waiter subscribed before probing, no
// wake-up is lost.
//
// KEYS: record. ARGV: "1" to mark, empty not to.
// Returns {status, token, lease ms left}; status is empty unless the record
// is in progress.
var probeScript = redis.NewScript(luaClock + `
local f = redis.pcall('HMGET', KEYS[1], 'status', 'token', 'lease_ms')
if f.err or f[1] ~= 'in_progress' then return {'', '', 0} end
if ARGV[1] == '1' then redis.call('HSET', KEYS[1], 'watch', '1') end
return {f[1], f[2] or '', (tonumber(f[3]) or 0) - now()}
`)
