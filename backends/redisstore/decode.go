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
// idem.ErrCorruptRecord naming the field. Unknown fields are ignored.
// Integers must be in parseDecimal's form. The scripts judge records by
// the same rules (luaRecord's valid), so that a record this function
// rejects is never taken over or overwritten.
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
		ms, ok := parseDecimal(v)
		if !ok && err == nil {
			err = corrupt(key, "field %q: bad time %q", name, v)
		}
		return time.UnixMilli(ms)
	}

	if v, ok := need(fieldStatus); ok {
		if rec.Status, err = idem.ParseStatus(v); err != nil {
			return nil, inField(key, fieldStatus, err)
		}
	}
	if v, ok := need(fieldFP); ok {
		if rec.Fingerprint, err = idem.ParseFingerprint(v); err != nil {
			return nil, inField(key, fieldFP, err)
		}
	}
	if v, ok := need(fieldToken); ok {
		tok, ok := parseDecimal(v)
		if !ok {
			return nil, corrupt(key, "field %q: bad token %q", fieldToken, v)
		}
		rec.Token = idem.Token(tok)
	}
	rec.FingerprintPolicy = h[fieldPolicy] // checked by Validate
	if v, ok := h[fieldPrev]; ok && v != "0" {
		if prev, ok := parseDecimal(v); !ok || idem.Token(prev) >= rec.Token {
			return nil, corrupt(key, "field %q: bad previous token %q for token %d", fieldPrev, v, rec.Token)
		}
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
			return nil, inField(key, fieldResponse, derr)
		}
		rec.Response = &resp
	}
	if verr := rec.Validate(); verr != nil {
		return nil, verr
	}
	return rec, nil
}

// parseDecimal parses the only integer form the scripts write and accept
// (luaRecord's dec): the decimal digits of a number in [1, 2^63-1], with no
// sign, no leading zero and nothing else. ok is false for anything else,
// including forms strconv would take ("+5", "007") and forms Lua's
// tonumber would ("0x10", "5.5", "1e3", " 5").
func parseDecimal(s string) (n int64, ok bool) {
	if len(s) == 0 || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
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
