package redisstore

import "github.com/redis/go-redis/v9"

// Script results: the first element of the table acquireScript and
// getScript return, and the whole reply of the fenced scripts (a plain
// integer is cheaper for Redis to return than a table), where any value of
// at least resultApplied means applied.
const (
	resultNoToken = -2 // acquire: the slot's fencing counter issues no valid token
	resultCorrupt = -1 // the key holds something that is not a valid record
	resultRefused = 0  // acquire: record returned; fenced write: lease lost
	resultApplied = 1  // the transition happened
)

// Record hash fields. Times are milliseconds since the Unix epoch by the
// Redis server's clock; tokens are decimal. When Redis deletes the record is
// the key's own expiry (PEXPIREAT/PEXPIRE), read back with PTTL.
const (
	fieldStatus   = "status"     // "in_progress", "completed", "failed" or "uncertain"
	fieldFP       = "fp"         // fingerprint, 64 hex digits
	fieldToken    = "token"      // fencing token of the owner
	fieldPrev     = "prev_token" // token taken over, "0" if none
	fieldLease    = "lease_ms"   // lease expiry (meaningful while in progress)
	fieldAcqID    = "acq_id"     // id of the Acquire call that wrote the lease
	fieldResponse = "response"   // completed/failed/uncertain: idem.EncodeResponse bytes
	fieldDoneID   = "done_id"    // completed/failed/uncertain: id of the call that wrote it
	fieldWatch    = "watch"      // present once a WaitChange subscribed
	fieldPolicy   = "fp_policy"  // fingerprint policy id; absent or empty: not named
)

// Every redis.call inside a script costs about a microsecond of server time
// on top of the command itself, and the transition scripts run on every
// request, so they make as few calls as the semantics allow: an absent key
// costs TYPE, TIME, INCR, HSET and PEXPIREAT to acquire, and a completion
// HMGET, HSET and PEXPIRE.

// luaClock holds the helpers of the scripts that read the time: now()
// reads the server clock, never the client's, in whole milliseconds: first
// rounded down, which is how a lease is judged (expired once its expiry
// is at or before it), then rounded up, which is where a lease granted or
// renewed now starts, so that it lasts at least its TTL in true time (from
// the rounded-down time it could end up to 1 ms early). fmt() renders an
// integer exactly (Lua's default number format switches to exponent form
// above 1e14).
const luaClock = `
local function now()
  local t = redis.call('TIME')
  local ms, us = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[2]) % 1000
  return ms, us > 0 and ms + 1 or ms
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
// grace ms, acquire call id, hash slot, fingerprint policy id ("" or
// missing for none; a take-over keeps the record's).
// Returns {1, token, prev token, lease expiry ms, counter found or false,
// policy id} for a lease (tokens as decimal strings; the counter only when
// the slot's counter was behind the token taken over, see luaClaim),
// {0, HGETALL, now ms, PTTL} for an existing record, {-1, type} for a key of
// another type, {-2, counter} when the slot's counter can issue no valid
// token.
//
// A record whose acq_id equals this call's id was written by this very call
// and delivered again by a client-side retry: the same lease is returned.
// Only an in-progress record that valid(f) accepts is taken over; anything
// else is returned for the caller to decode (and report as corrupt), and
// left as it is. A take-over overwrites every field an in-progress record
// has, so no DEL is needed. The counter is never decremented and never
// expires.
var acquireScript = redis.NewScript(luaClock + luaRecord + luaClaim + acquireBody)

// luaRecord holds the helpers every script that judges a record uses:
// the scripts themselves decide what they may take over or overwrite, so
// they must decode a record exactly as decodeRecord does, or refuse it.
//
// dec(s) holds for the canonical decimal form of an integer in
// [1, 2^63-1]: digits only, no sign, no leading zero, at most 19 digits.
// Lua numbers are doubles, exact only below 2^53, so tokens are kept as
// strings and compared (lt) and divided (split) digit-group-wise, never as
// one number. valid(f) holds when the fields f = {status, fp, token,
// lease_ms, acq_id, prev_token, response, watch, fp_policy} (an HMGET in
// that order; a missing field is false) form a record decodeRecord accepts
// (a policy id is at most 128 bytes of 0x21..0x7E), except that a
// finished record's response is checked for presence only (Go decodes it:
// see the package doc). The order of the HMGET fields is recordFields.
const luaRecord = `
local function dec(s)
  if type(s) ~= 'string' or #s > 19 or not string.find(s, '^[1-9][0-9]*$') then return false end
  if #s < 19 then return true end
  local hi = tonumber(string.sub(s, 1, 10))
  return hi < 9223372036 or (hi == 9223372036 and tonumber(string.sub(s, 11)) <= 854775807)
end
local function lt(a, b)
  if #a ~= #b then return #a < #b end
  local n = #a - 9
  if n > 0 then
    local x, y = tonumber(string.sub(a, 1, n)), tonumber(string.sub(b, 1, n))
    if x ~= y then return x < y end
    a, b = string.sub(a, n + 1), string.sub(b, n + 1)
  end
  return tonumber(a) < tonumber(b)
end
local function valid(f)
  local st = f[1]
  if st ~= 'in_progress' and st ~= 'completed' and st ~= 'failed' and st ~= 'uncertain' then return false end
  if type(f[2]) ~= 'string' or #f[2] ~= 64 or string.find(f[2], '[^0-9a-f]') then return false end
  if not dec(f[3]) then return false end
  if f[6] and f[6] ~= '0' and not (dec(f[6]) and lt(f[6], f[3])) then return false end
  if f[9] and (#f[9] > 128 or string.find(f[9], '[^!-~]')) then return false end
  if st == 'in_progress' then return dec(f[4]) and not f[7] end
  return f[7] and true or false
end
`

// recordFields is the HMGET field list of luaRecord's valid(f), as Lua
// arguments, followed by the waiter mark the fenced scripts read too.
const recordFields = `'status', 'fp', 'token', 'lease_ms', 'acq_id', 'prev_token', 'response', 'watch', 'fp_policy'`

// luaClaim defines claim(), the write of a new lease, shared by
// acquireScript and its multi-key form: it draws the token from the slot's
// counter, writes the in-progress record with its lease (leaseS, decimal
// ms) and sets the key to expire at expiry (ms), and returns the token as
// a decimal string. The fields are all those an in-progress record has, so
// a take-over needs no DEL.
//
// The token is counter*16384 + slot, rendered exactly (render): increasing
// with the slot's counter and unique across slots. prev is the token taken
// over ('0' for none). When the counter is behind it (the counter key was
// lost, evicted or restored from an older copy than the record), claim
// moves the counter to the first value whose token is above prev and
// returns the counter it found as its second value, so the token issued is
// always above the one it replaces. A counter that is not positive (and
// cannot be moved past a previous token) or whose next token would pass
// 2^63-1 issues nothing: claim writes no record and returns nil and the
// counter's value.
const luaClaim = `
local function split(s)
  local hi, lo = 0, tonumber(s)
  if #s > 9 then hi, lo = tonumber(string.sub(s, 1, #s - 9)), tonumber(string.sub(s, #s - 8)) end
  local m = (hi % 16384) * 1e9 + lo
  return math.floor(hi / 16384) * 1e9 + math.floor(m / 16384), m % 16384
end
local function render(c, slot)
  local y = (c % 1e6) * 16384 + slot
  local hi, lo = math.floor(c / 1e6) * 16384 + math.floor(y / 1e6), y % 1e6
  if hi == 0 then return string.format('%d', lo) end
  return string.format('%d%06d', hi, lo)
end
local function claim(rec, fence, fp, slot, prev, leaseS, expiry, id, policy)
  local c = redis.call('INCR', fence)
  local was
  if prev ~= '0' then
    local q, r = split(prev)
    if c < q or (c == q and slot <= r) then was, c = c, q + 1 end
  end
  if c < 1 or c > 562949953421311 then return nil, redis.call('GET', fence) end
  if was then redis.call('SET', fence, string.format('%d', c)) end
  local tok = render(c, slot)
  redis.call('HSET', rec, 'status', 'in_progress', 'fp', fp, 'token', tok,
    'prev_token', prev, 'lease_ms', leaseS, 'acq_id', id, 'fp_policy', policy)
  redis.call('PEXPIREAT', rec, expiry)
  return tok, was
end
`

// acquireBody is acquireScript without the helpers.
const acquireBody = `
local ty = redis.call('TYPE', KEYS[1])['ok']
if ty ~= 'none' and ty ~= 'hash' then return {-1, ty} end
local t, up = now()
local prev, policy = '0', ARGV[6] or ''
if ty == 'hash' then
  local f = redis.call('HMGET', KEYS[1], ` + recordFields + `)
  if f[1] == 'in_progress' and valid(f) then
    if f[5] == ARGV[4] then return {1, f[3], f[6] or '0', tonumber(f[4]), false, f[9] or ''} end
    if f[2] == ARGV[1] and tonumber(f[4]) <= t then prev, policy = f[3], f[9] or '' end
  end
  if prev == '0' then return {0, redis.call('HGETALL', KEYS[1]), t, redis.call('PTTL', KEYS[1])} end
end
local lease = up + tonumber(ARGV[2])
local tok, was = claim(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[5]), prev, fmt(lease), lease + tonumber(ARGV[3]), ARGV[4], policy)
if not tok then return {-2, was or ''} end
return {1, tok, prev, lease, was or false, policy}
`

// luaOwned is the fencing check shared by the fenced scripts: it reads the
// record into f (see luaRecord; st = f[1]) and sets owned when the record
// is in progress with the token in ARGV[1]. It returns early with -1 when
// the key holds something valid(f) rejects (the script writes nothing
// then, owned or not) and with 0 when the key is absent (lease lost),
// running EXISTS only when HMGET found no status; otherwise it falls
// through to the script's own handling of a record it does not own. On a
// key of another type HMGET fails the script with WRONGTYPE before
// anything was written (redis.call, not the slower redis.pcall).
const luaOwned = `
local f = redis.call('HMGET', KEYS[1], ` + recordFields + `)
local st = f[1]
if not st then
  if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
  return 0
end
if not valid(f) then return -1 end
local owned = st == 'in_progress' and f[3] == ARGV[1]
`

// heartbeatScript extends a lease.
//
// KEYS: record. ARGV: token, lease TTL ms, take-over grace ms.
// Returns the new lease expiry ms, 0 (lease lost) or -1 (corrupt), or fails
// with WRONGTYPE.
var heartbeatScript = redis.NewScript(luaClock + luaRecord + luaOwned + `
if not owned then return 0 end
local _, up = now()
local lease = up + tonumber(ARGV[2])
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
var finishScript = redis.NewScript(luaRecord + finishBody)

// finishBody is finishScript's source without the helpers.
var finishBody = luaOwned + `
if not owned then
  if st == ARGV[2] and f[3] == ARGV[1] and redis.call('HGET', KEYS[1], 'done_id') == ARGV[5] then
    return 1
  end
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'response', ARGV[3], 'done_id', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if f[8] then` + luaNotify("ARGV[2]") + `end
return 1
`

// releaseScript deletes an in-progress record so the request can be retried,
// and wakes waiters. The fencing counter is untouched.
//
// KEYS: record. ARGV: token.
// Returns 1, 0 (lease lost) or -1 (corrupt), or fails with WRONGTYPE.
var releaseScript = redis.NewScript(luaRecord + releaseBody)

// releaseBody is releaseScript's source without the helpers.
var releaseBody = luaOwned + `
if not owned then return 0 end
redis.call('DEL', KEYS[1])
if f[8] then` + luaNotify("'released'") + `end
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
