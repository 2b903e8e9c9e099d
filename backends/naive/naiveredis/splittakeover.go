package naiveredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// SplitTakeover is redisstore.Store except for the take-over of an expired
// lease, which it makes in two round trips: it reads the record and the
// server time (HMGET and TIME, one pipeline), and when the lease is
// expired it writes a new lease in a second round trip, by key alone,
// without looking at the record again. Callers that retry a dead holder's
// key at the same moment all read the same expired lease and all take it
// over: two leases are granted for one key, each with the same previous
// token (I7), and the lower one's writes are accepted after the higher
// one was granted (I8). Claiming an absent key and answering an existing
// record are the production script's (after the read), and so is every
// other transition. It is racy-takeover (package naive) over a
// connection: in the simulation the race is reached by the seed's order
// of the round trips of calls at one instant alone, no fault needed.
type SplitTakeover struct {
	split
	graceMS int64
}

// NewSplitTakeover returns a SplitTakeover store on client; opts are the
// production store's.
func NewSplitTakeover(client redis.UniversalClient, opts redisstore.Options) (*SplitTakeover, error) {
	s := &SplitTakeover{}
	if err := s.init(client, opts); err != nil {
		return nil, err
	}
	grace := opts.TakeoverGrace
	if grace == 0 {
		grace = redisstore.DefaultTakeoverGrace
	}
	s.graceMS = grace.Milliseconds()
	return s, nil
}

// takeoverScript writes a new in-progress lease over KEYS[1] with a token
// from KEYS[2] above ARGV[4] (the token read), whatever the record holds
// now. KEYS: record, counter. ARGV: fingerprint, lease TTL ms, grace ms,
// previous token, acquire id, policy. Returns {token, lease expiry ms}.
var takeoverScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local c = redis.call('INCR', KEYS[2])
local prev = tonumber(ARGV[4])
if c <= prev then c = prev + 1; redis.call('SET', KEYS[2], string.format('%d', c)) end
local tok = string.format('%d', c)
local lease = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'status', 'in_progress', 'fp', ARGV[1], 'token', tok, 'prev_token', ARGV[4],
  'lease_ms', string.format('%d', lease), 'acq_id', ARGV[5], 'fp_policy', ARGV[6])
redis.call('PEXPIREAT', KEYS[1], lease + tonumber(ARGV[3]))
return {tok, lease}
`)

// Acquire reads, then takes an expired lease over by key alone. That is
// the flaw.
func (s *SplitTakeover) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := idem.ValidateKey(key); err != nil {
		return nil, nil, err
	}
	rec := recordKey(s.prefix, key)
	var f *redis.SliceCmd
	var tm *redis.TimeCmd
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		f = p.HMGet(ctx, rec, "status", "fp", "token", "lease_ms", "fp_policy")
		tm = p.Time(ctx)
		return nil
	}); err != nil {
		return nil, nil, idem.BackendError("acquire", err)
	}
	v := f.Val()
	status, _ := v[0].(string)
	recFP, _ := v[1].(string)
	prev, _ := v[2].(string)
	leaseMS, _ := v[3].(string)
	policy, _ := v[4].(string)
	lease, err := strconv.ParseInt(leaseMS, 10, 64)
	if status != "in_progress" || recFP != fp.String() || err != nil || lease > tm.Val().UnixMilli() {
		return s.Store.Acquire(ctx, key, fp, leaseTTL)
	}
	// The lease read was expired: take it over, without looking again.
	res, err := takeoverScript.Run(ctx, s.client, []string{rec, rec + ":splitfence"},
		fp.String(), leaseTTL.Milliseconds(), s.graceMS, prev, s.nextID(), policy).Slice()
	if err != nil {
		return nil, nil, idem.MarkAmbiguous(idem.BackendError("acquire", err))
	}
	tokS, _ := res[0].(string)
	exp, _ := res[1].(int64)
	tok, err1 := strconv.ParseUint(tokS, 10, 64)
	prevTok, err2 := strconv.ParseUint(prev, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, nil, fmt.Errorf("naiveredis: acquire %q: bad take-over reply %v", key, res)
	}
	return &idem.Lease{Key: key, Token: idem.Token(tok), Fingerprint: fp, FingerprintPolicy: policy,
		PrevToken: idem.Token(prevTok), Expiry: time.UnixMilli(exp)}, nil, nil
}
