package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/idem"
)

// maxRawFields is how many elements of a list, set or sorted set
// GetCorrupt returns; the digest covers all of them. A hash (which must be
// decoded) and a string are returned whole.
const maxRawFields = 64

// luaRaw defines raw(key, maxf): the content of a record key of any type
// and the SHA-1 of a canonical form of it (the type, then every field name
// and value, length-prefixed; hash fields and set members sorted, so the
// digest does not depend on Redis's internal order). Types without a
// canonical form here (streams, modules) are digested through DUMP. It
// returns nil for a missing key, else {type, digest, field count, {name1,
// value1, ...}} with every hash field and at most maxf other elements.
const luaRaw = `
local function raw(key, maxf)
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' then return nil end
  local canon, fields, n = {t, '\n'}, {}, 0
  local function add(name, v, keep)
    canon[#canon + 1] = #name .. ':' .. name .. #v .. ':' .. v
    n = n + 1
    if keep or n <= maxf then
      fields[#fields + 1] = name
      fields[#fields + 1] = v
    end
  end
  if t == 'hash' then
    local h = redis.call('HGETALL', key)
    local names, vals = {}, {}
    for i = 1, #h, 2 do
      names[#names + 1] = h[i]
      vals[h[i]] = h[i + 1]
    end
    table.sort(names)
    for _, f in ipairs(names) do add(f, vals[f], true) end
  elseif t == 'string' then
    add('value', redis.call('GET', key), true)
  elseif t == 'list' then
    for i, v in ipairs(redis.call('LRANGE', key, 0, -1)) do add('[' .. (i - 1) .. ']', v) end
  elseif t == 'set' then
    local m = redis.call('SMEMBERS', key)
    table.sort(m)
    for i, v in ipairs(m) do add('[' .. (i - 1) .. ']', v) end
  elseif t == 'zset' then
    local z = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    for i = 1, #z, 2 do add(z[i], z[i + 1]) end
  else
    canon[#canon + 1] = redis.call('DUMP', key)
  end
  return {t, redis.sha1hex(table.concat(canon)), n, fields}
end
`

// rawScript reads a record key's raw content. KEYS: record. ARGV: the
// element limit. Returns raw's reply, or nil for a missing key.
var rawScript = redis.NewScript(luaRaw + `
local r = raw(KEYS[1], tonumber(ARGV[1]))
if not r then return false end
return r
`)

// purgeCorruptScript deletes the record key if its content has the digest
// ARGV[1]. KEYS: record. Returns 1 deleted, 0 missing, -1 changed.
var purgeCorruptScript = redis.NewScript(luaRaw + `
local r = raw(KEYS[1], 0)
if not r then return 0 end
if r[2] ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
return 1
`)

// GetCorrupt implements idem.CorruptLister. A key of another type than a
// hash (a string, a list) is corrupt; a hash is corrupt when Get could not
// decode it, with the same decoder.
func (s *Store) GetCorrupt(ctx context.Context, key string) (*idem.CorruptRecord, error) {
	if err := idem.ValidateKey(key); err != nil {
		return nil, err
	}
	return s.getCorrupt(ctx, s.client, key)
}

// getCorrupt is GetCorrupt through c (the node that holds key, when
// listing).
func (s *Store) getCorrupt(ctx context.Context, c redis.Scripter, key string) (*idem.CorruptRecord, error) {
	name := keysFor(s.opts.Prefix, key).record
	res, err := rawScript.Run(ctx, c, []string{name}, maxRawFields).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: key %q: %w", key, idem.ErrNotFound)
	}
	if err != nil {
		return nil, storeError("inspect", err, false)
	}
	rec, ok := rawRecord(key, res)
	if !ok {
		return nil, unexpected("inspect", res)
	}
	if rec.Type != "hash" {
		rec.Reason = corrupt(key, "redis key %q is a %s, not a hash", name, rec.Type).Error()
		return rec, nil
	}
	h := make(map[string]string, len(rec.Fields))
	for _, f := range rec.Fields {
		h[f.Name] = string(f.Value)
	}
	if _, err := decodeRecord(key, h, 0, -1); err != nil {
		rec.Reason = err.Error()
		return rec, nil
	}
	return nil, fmt.Errorf("redisstore: key %q: %w", key, idem.ErrNotCorrupt)
}

// rawRecord decodes rawScript's reply; ok is false for one of the wrong
// shape.
func rawRecord(key string, res []any) (*idem.CorruptRecord, bool) {
	if len(res) != 4 {
		return nil, false
	}
	typ, ok1 := res[0].(string)
	digest, ok2 := res[1].(string)
	n, ok3 := res[2].(int64)
	pairs, ok4 := res[3].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(pairs)%2 != 0 {
		return nil, false
	}
	rec := &idem.CorruptRecord{Key: key, Type: typ, Digest: digest, Fields: make([]idem.RawField, 0, len(pairs)/2)}
	for i := 0; i < len(pairs); i += 2 {
		name, ok1 := pairs[i].(string)
		v, ok2 := pairs[i+1].(string)
		if !ok1 || !ok2 {
			return nil, false
		}
		rec.Fields = append(rec.Fields, idem.RawField{Name: name, Value: []byte(v)})
	}
	rec.More = int(n) - len(rec.Fields)
	return rec, true
}

// ListCorrupt implements idem.CorruptLister: it SCANs the record names as
// ListStuck does (every primary of a Cluster), reads each batch with Get's
// script in one pipelined round trip, and reads the raw content of the
// records that do not decode.
func (s *Store) ListCorrupt(ctx context.Context, prefix string, limit int) ([]*idem.CorruptRecord, error) {
	return scanUpTo(ctx, s, prefix, limit, func(ctx context.Context, node *redis.Client, keys []string, add func(*idem.CorruptRecord) bool) error {
		_, suspects, err := s.getMany(ctx, node, keys)
		if err != nil {
			return err
		}
		for _, k := range suspects {
			rec, err := s.getCorrupt(ctx, node, k)
			switch {
			case errors.Is(err, idem.ErrNotFound), errors.Is(err, idem.ErrNotCorrupt):
				continue // changed since the first read
			case err != nil:
				return err
			}
			if !add(rec) {
				return nil
			}
		}
		return nil
	})
}

// PurgeCorrupt implements idem.CorruptPurger. It reads the record, checks
// that it does not decode and has digest, then deletes it with a script
// that recomputes the digest on the server and deletes only on a match, so
// the record deleted is byte for byte the one that was checked.
func (s *Store) PurgeCorrupt(ctx context.Context, key, digest string) error {
	rec, err := s.GetCorrupt(ctx, key)
	if err != nil {
		return err
	}
	if rec.Digest != digest {
		return fmt.Errorf("redisstore: key %q: digest %s, not %s: %w", key, rec.Digest, digest, idem.ErrRecordChanged)
	}
	res, err := purgeCorruptScript.Run(ctx, s.client, []string{keysFor(s.opts.Prefix, key).record}, digest).Int()
	if err != nil {
		return storeError("purge", err, true)
	}
	switch res {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("redisstore: key %q: %w", key, idem.ErrNotFound)
	}
	return fmt.Errorf("redisstore: key %q: %w", key, idem.ErrRecordChanged)
}
