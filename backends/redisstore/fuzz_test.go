package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// FuzzDecodeRecord feeds decodeRecord (the decoder of every record read from
// Redis) arbitrary hash fields. It must never panic; it either returns a
// record that validates and carries exactly the fields it was given, or an
// error wrapping idem.ErrCorruptRecord.
func FuzzDecodeRecord(f *testing.F) {
	fp := idem.Fingerprint{1, 2, 3}.String()
	ok := string(idem.EncodeResponse(&idem.Response{Status: 201, Header: map[string][]string{"A": {"b"}}, Body: []byte("body")}))
	f.Add("in_progress", fp, "5", "1700000000000", "", uint8(0b0111), int64(1700000000000), int64(30000))
	f.Add("completed", fp, "7", "", ok, uint8(0b1011), int64(1700000000000), int64(-1))
	f.Add("failed", fp, "9", "", ok, uint8(0b1011), int64(1), int64(0))
	f.Add("done", "zz", "-3", "soon", "\x01\xff\xff\xff", uint8(0b1111), int64(-5), int64(7))
	f.Add("in_progress", fp, "18446744073709551615", "9223372036854775807", ok, uint8(0b1111), int64(0), int64(1))
	f.Fuzz(func(t *testing.T, status, fpv, token, lease, response string, present uint8, nowMS, pttl int64) {
		h := map[string]string{fieldStatus: status, fieldFP: fpv, fieldToken: token}
		if present&0b100 == 0 {
			delete(h, fieldToken)
		}
		if present&0b010 == 0 {
			delete(h, fieldFP)
		}
		if present&0b001 != 0 {
			h[fieldLease] = lease
		}
		if present&0b1000 != 0 {
			h[fieldResponse] = response
		}
		rec, err := decodeRecord("k", h, nowMS, pttl)
		if !storetest.Decoded(t, rec, err) {
			return
		}
		if rec.Key != "k" || rec.Status.String() != status || rec.Fingerprint.String() != fpv {
			t.Fatalf("record %+v from status %q fp %q", rec, status, fpv)
		}
		if pttl >= 0 && !rec.ExpiresAt.Equal(time.UnixMilli(nowMS+pttl)) {
			t.Fatalf("expiry %v, want now %d + pttl %d ms", rec.ExpiresAt, nowMS, pttl)
		}
		if r, in := h[fieldResponse]; in != (rec.Response != nil) {
			t.Fatalf("response field present %v, decoded response %v", in, rec.Response)
		} else if in && string(idem.EncodeResponse(rec.Response)) != r {
			// Decoding is exact: re-encoding gives the stored bytes back.
			t.Fatalf("response %q decodes to %+v, which encodes differently", r, rec.Response)
		}
	})
}

// FuzzScriptRecord feeds scriptRecord (the decoder of the record part of a
// script reply) replies of any shape: it must never panic, and only a
// well-formed reply is ok.
func FuzzScriptRecord(f *testing.F) {
	f.Add("status", "in_progress", int64(1700000000000), int64(5000), uint8(0))
	f.Add("x", "y", int64(0), int64(-1), uint8(1))
	f.Add("", "", int64(-1), int64(-2), uint8(2))
	f.Fuzz(func(t *testing.T, k, v string, now, pttl int64, shape uint8) {
		var res []any
		switch shape % 5 {
		case 0:
			res = []any{[]any{k, v}, now, pttl}
		case 1:
			res = []any{[]any{k}, now, pttl} // odd pairs
		case 2:
			res = []any{[]any{k, int64(3)}, now, pttl} // value of the wrong type
		case 3:
			res = []any{[]any{}, now, pttl}
		case 4:
			res = []any{k, v} // too short
		}
		rec, ok, err := scriptRecord("k", res, 0)
		if !ok && (rec != nil || err != nil) {
			t.Fatalf("bad shape %d gave record %v, error %v", shape%5, rec, err)
		}
		if ok != (shape%5 == 0 || shape%5 == 3) {
			t.Fatalf("shape %d: ok %v", shape%5, ok)
		}
		if err != nil && !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("error %v does not wrap idem.ErrCorruptRecord", err)
		}
	})
}
