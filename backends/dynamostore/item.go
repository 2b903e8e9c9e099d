package dynamostore

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/idem"
)

// Attribute names of a record item and of a counter item.
const (
	attrPK      = "pk"
	attrStatus  = "st"
	attrFP      = "fp"
	attrToken   = "tok"
	attrLease   = "lx"
	attrExpires = "ex"
	attrResp    = "resp"
	attrTTL     = "ttl"
	attrPolicy  = "fpp" // fingerprint policy id; absent: not named
	attrCounter = "n"
)

// maxMillis is the largest time an lx or ex attribute may carry: the end of
// year 9999, as Unix milliseconds. Larger values are corrupt.
const maxMillis = 253402300799999

// MaxItemSize is DynamoDB's item size limit, 400 KB.
const MaxItemSize = 400 * 1024

// MaxResponseSize is a response size cap (idem.WithMaxResponseSize) under
// which every completed record fits in an item, whatever its key and
// header layout: MaxItemSize less room for the key, the other attributes
// and the response encoding's length prefixes (which grow with the number
// of headers; a response with more than 256 header values may need a
// smaller cap).
const MaxResponseSize = MaxItemSize - 8*1024

// decoded is an item read back: the record when one is present, or absent
// (no item, or past ex); tok is the item's token when it parses, for the
// counter check of a claim that replaces the item.
type decoded struct {
	rec    *idem.Record
	absent bool
	tok    idem.Token
}

// decodeItem judges item as the record of key at now. The rules, which
// every condition expression of the store mirrors:
//
//   - no item → absent;
//   - ex: a number (a fraction is rounded up to whole milliseconds) in
//     [0, maxMillis]; ex <= now → absent, nothing else is looked at;
//   - st: "in_progress", "completed" or "failed";
//   - fp: binary, exactly 32 bytes;
//   - tok: an integer in [1, idem.MaxToken];
//   - fpp: absent, or a string idem.ValidatePolicy accepts;
//   - in progress: lx a number like ex, and no resp;
//   - completed or failed: no lx, and resp binary that idem.DecodeResponse
//     accepts;
//   - any other attribute (ttl included) is ignored.
//
// Anything else is an error wrapping idem.ErrCorruptRecord.
func decodeItem(key string, item map[string]types.AttributeValue, now time.Time) (decoded, error) {
	if item == nil {
		return decoded{absent: true}, nil
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: key %q: %s", idem.ErrCorruptRecord, key, fmt.Sprintf(format, args...))
	}
	var d decoded
	if n, ok := item[attrToken].(*types.AttributeValueMemberN); ok {
		if t, err := strconv.ParseUint(n.Value, 10, 64); err == nil && t >= 1 && t <= uint64(idem.MaxToken) {
			d.tok = idem.Token(t)
		}
	}
	ex, err := millis(item, attrExpires)
	if err != nil {
		return d, corrupt("%v", err)
	}
	if !ex.After(now) {
		d.absent = true
		return d, nil
	}
	rec := &idem.Record{Key: key, ExpiresAt: ex}
	stAV, ok := item[attrStatus].(*types.AttributeValueMemberS)
	if !ok {
		return d, corrupt("status attribute %s missing or not a string", attrStatus)
	}
	if rec.Status, err = idem.ParseStatus(stAV.Value); err != nil {
		return d, fmt.Errorf("key %q: %w", key, err)
	}
	fpAV, ok := item[attrFP].(*types.AttributeValueMemberB)
	if !ok || len(fpAV.Value) != len(rec.Fingerprint) {
		return d, corrupt("fingerprint attribute %s missing, not binary or not %d bytes", attrFP, len(rec.Fingerprint))
	}
	copy(rec.Fingerprint[:], fpAV.Value)
	if av, ok := item[attrPolicy]; ok {
		p, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return d, corrupt("policy attribute %s not a string", attrPolicy)
		}
		rec.FingerprintPolicy = p.Value // checked by Validate
	}
	if d.tok == 0 {
		return d, corrupt("token attribute %s missing or not an integer in [1, %d]", attrToken, idem.MaxToken)
	}
	rec.Token = d.tok
	_, hasLease := item[attrLease]
	respAV, hasResp := item[attrResp]
	switch rec.Status {
	case idem.StatusInProgress:
		if hasResp {
			return d, corrupt("in-progress record carries a response")
		}
		if rec.LeaseExpiry, err = millis(item, attrLease); err != nil {
			return d, corrupt("%v", err)
		}
	default:
		if hasLease {
			return d, corrupt("%s record carries a lease expiry", rec.Status)
		}
		b, ok := respAV.(*types.AttributeValueMemberB)
		if !ok {
			return d, corrupt("%s record without a binary response", rec.Status)
		}
		resp, err := idem.DecodeResponse(b.Value)
		if err != nil {
			return d, fmt.Errorf("key %q: %w", key, err)
		}
		rec.Response = &resp
	}
	if err := rec.Validate(); err != nil {
		return d, err
	}
	d.rec = rec
	return d, nil
}

// millis reads attribute name as a time in Unix milliseconds.
func millis(item map[string]types.AttributeValue, name string) (time.Time, error) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, fmt.Errorf("attribute %s missing or not a number", name)
	}
	f, ok := new(big.Float).SetString(n.Value)
	if !ok {
		return time.Time{}, fmt.Errorf("attribute %s: %q is not a number", name, n.Value)
	}
	if f.Sign() < 0 || f.Cmp(big.NewFloat(maxMillis)) > 0 {
		return time.Time{}, fmt.Errorf("attribute %s: %s not in [0, %d]", name, n.Value, int64(maxMillis))
	}
	ms, acc := f.Int64()
	if acc == big.Below { // a fraction: round up, as a condition "ex > now" compares it
		ms++
	}
	return time.UnixMilli(ms), nil
}

// Attribute value constructors.
func numAV(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func tokAV(t idem.Token) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(uint64(t), 10)}
}
func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func binAV(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

// msAV is t as Unix milliseconds.
func msAV(t time.Time) types.AttributeValue { return numAV(t.UnixMilli()) }

// ttlAV is DynamoDB's TTL value for a record logically gone at ex: Unix
// seconds, rounded up.
func ttlAV(ex time.Time) types.AttributeValue {
	return numAV(int64(math.Ceil(float64(ex.UnixMilli()) / 1000)))
}

// itemSize is DynamoDB's size of item: attribute names plus values (a
// number counted as its digits, generously).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)/2 + 2
		default:
			n += 8
		}
	}
	return n
}
