package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// FencedSink applies business side effects to Redis only for writers whose
// fencing token is not older than the newest token already applied for the
// same effect key (docs/design/engine.md, "Leases, heartbeat, fencing tokens"). A holder whose lease
// was taken over while it stalled carries an older token than its successor,
// so its late write is rejected instead of overwriting the successor's.
//
// Each effect key is one hash prefix:fx:{effectKey} with the fields token
// and value; it has no TTL. The zero FencedSink is not usable; call
// NewFencedSink.
type FencedSink struct {
	client redis.UniversalClient
	prefix string
}

// NewFencedSink returns a sink that keeps its effect keys in client under
// prefix; an empty prefix means DefaultPrefix. A prefix containing '{' or
// '}' or a byte that is not printable ASCII returns an error.
func NewFencedSink(client redis.UniversalClient, prefix string) (*FencedSink, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	o, err := Options{Prefix: prefix}.withDefaults()
	if err != nil {
		return nil, err
	}
	return &FencedSink{client: client, prefix: o.Prefix}, nil
}

// applyFencedScript: KEYS: effect key. ARGV: token, value.
// Returns 1 if applied, 0 if rejected as stale, or the error CORRUPT.
var applyFencedScript = redis.NewScript(`
local last = redis.call('HGET', KEYS[1], 'token')
if last then
  local n = tonumber(last)
  if not n then return redis.error_reply('CORRUPT effect token ' .. last) end
  if n > tonumber(ARGV[1]) then return 0 end
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1
`)

func (f *FencedSink) key(effectKey string) string {
	return f.prefix + ":fx:{" + escapeTag(effectKey) + "}"
}

// ApplyFenced stores value for effectKey if token is at least the last token
// applied there, and records token as the last one. It reports applied false,
// changing nothing, when a newer token was applied before. Applying again
// with the same token succeeds (and overwrites the value), so a retried
// delivery of one write is harmless. Token zero is rejected.
//
// Errors wrap idem.ErrBackend, and idem.MarkAmbiguous when the write may have
// happened; a stored token that is not a number wraps idem.ErrCorruptRecord.
func (f *FencedSink) ApplyFenced(ctx context.Context, effectKey string, token idem.Token, value string) (applied bool, err error) {
	if token == 0 {
		return false, errors.New("redisstore: apply fenced: zero token")
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	n, err := applyFencedScript.Run(ctx, f.client, []string{f.key(effectKey)},
		strconv.FormatUint(uint64(token), 10), value).Int64()
	if err != nil {
		if redis.HasErrorPrefix(err, "CORRUPT") {
			return false, fmt.Errorf("redisstore: effect %q: %w: %v", effectKey, idem.ErrCorruptRecord, err)
		}
		return false, storeError("apply fenced", err, true)
	}
	return n == 1, nil
}

// Last returns the last applied token and value of effectKey, or an error
// wrapping idem.ErrNotFound when nothing was applied.
func (f *FencedSink) Last(ctx context.Context, effectKey string) (idem.Token, string, error) {
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	v, err := f.client.HMGet(ctx, f.key(effectKey), "token", "value").Result()
	if err != nil {
		if redis.HasErrorPrefix(err, "WRONGTYPE") {
			return 0, "", fmt.Errorf("redisstore: effect %q: %w: not a hash", effectKey, idem.ErrCorruptRecord)
		}
		return 0, "", storeError("last", err, false)
	}
	ts, ok1 := v[0].(string)
	val, ok2 := v[1].(string)
	if !ok1 && !ok2 {
		return 0, "", fmt.Errorf("redisstore: effect %q: %w", effectKey, idem.ErrNotFound)
	}
	tok, perr := strconv.ParseUint(ts, 10, 64)
	if !ok1 || !ok2 || perr != nil || tok == 0 {
		return 0, "", fmt.Errorf("redisstore: effect %q: %w: token %q", effectKey, idem.ErrCorruptRecord, ts)
	}
	return idem.Token(tok), val, nil
}
