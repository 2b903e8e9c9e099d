package redisstore

import (
	"strconv"
	"time"

	"github.com/idembench/idembench/idem"
)

// decodeRecord builds the record of key from its hash fields and validates
// it. nowMS is the server time and pttl the key's remaining time to live in
// milliseconds (negative: no expiry), from which ExpiresAt is computed.
// Missing, unparsable or contradictory fields return an error wrapping
// idem.ErrCorruptRecord. Unknown fields are ignored.
func decodeRecord(key string, h map[string]string, nowMS, pttl int64) (*idem.Record, error) {
	rec := &idem.Record{Key: key}
	var err error
	need := func(name string) (string, bool) {
		v, ok := h[name]
		if !ok && err == nil {
			err = corrupt(key, "field %q missing", name)
		}
		return v, ok
	}
	millisField := func(name string) time.Time {
		v, ok := need(name)
		if !ok {
			return time.Time{}
		}
		ms, perr := strconv.ParseInt(v, 10, 64)
		if (perr != nil || ms <= 0) && err == nil {
			err = corrupt(key, "field %q: bad time %q", name, v)
		}
		return time.UnixMilli(ms)
	}

	if v, ok := need(fieldStatus); ok {
		if rec.Status, err = idem.ParseStatus(v); err != nil {
			return nil, inKey(key, err)
		}
	}
	if v, ok := need(fieldFP); ok {
		if rec.Fingerprint, err = idem.ParseFingerprint(v); err != nil {
			return nil, inKey(key, err)
		}
	}
	if v, ok := need(fieldToken); ok {
		tok, perr := strconv.ParseUint(v, 10, 64)
		if perr != nil {
			return nil, corrupt(key, "field %q: bad token %q", fieldToken, v)
		}
		rec.Token = idem.Token(tok)
	}
	if pttl >= 0 {
		rec.ExpiresAt = time.UnixMilli(nowMS + pttl)
	}
	if rec.Status == idem.StatusInProgress {
		rec.LeaseExpiry = millisField(fieldLease)
	}
	if err != nil {
		return nil, err
	}
	if v, ok := h[fieldResponse]; ok {
		resp, derr := idem.DecodeResponse([]byte(v))
		if derr != nil {
			return nil, inKey(key, derr)
		}
		rec.Response = &resp
	}
	if verr := rec.Validate(); verr != nil {
		return nil, verr
	}
	return rec, nil
}

// pairsToMap turns a flat HGETALL reply from a script into a map. A reply of
// the wrong shape returns ok false.
func pairsToMap(v any) (map[string]string, bool) {
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, false
	}
	h := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		k, ok1 := list[i].(string)
		val, ok2 := list[i+1].(string)
		if !ok1 || !ok2 {
			return nil, false
		}
		h[k] = val
	}
	return h, true
}

// scriptRecord decodes the {HGETALL, now ms, PTTL} part of a script reply,
// starting at res[i]. ok is false for a reply of the wrong shape; an empty
// hash returns a nil record.
func scriptRecord(key string, res []any, i int) (rec *idem.Record, ok bool, err error) {
	if len(res) < i+3 {
		return nil, false, nil
	}
	h, ok1 := pairsToMap(res[i])
	nowMS, ok2 := replyInt(res, i+1)
	pttl, ok3 := replyInt(res, i+2)
	if !ok1 || !ok2 || !ok3 {
		return nil, false, nil
	}
	if len(h) == 0 {
		return nil, true, nil
	}
	rec, err = decodeRecord(key, h, nowMS, pttl)
	return rec, true, err
}
