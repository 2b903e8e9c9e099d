package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

var _ idem.UncertainStore = (*Store)(nil)

// resultAbsent is resolveScript's reply for a key that holds nothing.
const resultAbsent = -3

// MarkUncertain stores resp as the uncertain outcome of l's execution, kept
// for retention: finishScript with the status "uncertain". Fencing and
// errors are as for Complete. Acquire returns an uncertain record unchanged
// (only an in-progress record is ever taken over).
func (s *Store) MarkUncertain(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "uncertain", idem.StatusUncertain, l, resp, retention)
}

// resolveScript settles an uncertain record, fenced by its token.
//
// KEYS: record. ARGV: token, "1" (applied) or "0" (not applied), encoded
// response, retention ms, call id.
// Returns 1 (resolved), 0 (not uncertain with this token), -1 (corrupt) or
// -3 (absent), or fails with WRONGTYPE.
//
// Applied: the record becomes completed with the response (done_id = the
// call id, so that a client-side retry of this very call is told 1). Not
// applied: the record is deleted; the slot's counter is untouched. The
// record is judged by luaRecord's valid first, like every fenced write.
var resolveScript = redis.NewScript(luaRecord + `
local f = redis.call('HMGET', KEYS[1], ` + recordFields + `)
local st = f[1]
if not st then
  if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
  return -3
end
if not valid(f) then return -1 end
if f[3] ~= ARGV[1] then return 0 end
if st ~= 'uncertain' then
  if st == 'completed' and ARGV[2] == '1' and redis.call('HGET', KEYS[1], 'done_id') == ARGV[5] then return 1 end
  return 0
end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'status', 'completed', 'response', ARGV[3], 'done_id', ARGV[5])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
else
  redis.call('DEL', KEYS[1])
end
return 1
`)

// Resolve implements idem.UncertainStore with one script (resolveScript).
// A resolution as not applied whose reply was lost and that the client
// library retried reports idem.ErrNotFound, although the key was freed.
func (s *Store) Resolve(ctx context.Context, key string, token idem.Token, applied *idem.Response, retention time.Duration) error {
	if err := idem.ValidateKey(key); err != nil {
		return err
	}
	if token == 0 || token > idem.MaxToken {
		return fmt.Errorf("redisstore: resolve: key %q: token %d: %w", key, token, idem.ErrNotUncertain)
	}
	if retention <= 0 {
		return fmt.Errorf("redisstore: resolve: retention %v is not positive", retention)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mode, resp := "0", ""
	if applied != nil {
		mode, resp = "1", string(idem.EncodeResponse(applied))
	}
	k := keysFor(s.opts.Prefix, key)
	cmd, werr := s.runWrite(ctx, "resolve", resolveScript, []string{k.record}, appliedInt,
		strconv.FormatUint(uint64(token), 10), mode, resp, millis(retention), s.callID())
	res, err := cmd.Int64()
	switch {
	case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		return corrupt(key, "redis key %q is not a hash", k.record)
	case err != nil:
		return storeError("resolve", err, true)
	case werr != nil:
		return werr
	case res == resultApplied:
		return nil
	case res == resultAbsent:
		return fmt.Errorf("redisstore: resolve: key %q: %w", key, idem.ErrNotFound)
	case res == resultCorrupt:
		return corrupt(key, "redis key %q does not hold a valid record (see Get for the field)", k.record)
	case res == resultRefused:
		// The script judges every field but a finished record's response:
		// a record that does not decode is reported as corrupt.
		if _, gerr := s.Get(ctx, key); errors.Is(gerr, idem.ErrCorruptRecord) {
			return gerr
		}
		return fmt.Errorf("redisstore: resolve: key %q token %d: %w", key, token, idem.ErrNotUncertain)
	}
	return unexpected("resolve", []any{res})
}
