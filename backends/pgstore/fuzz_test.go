package pgstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// FuzzRowRecord feeds row.record (the decoder of every row read from the
// records table) arbitrary column values. It must never panic; it either
// returns a record that validates and carries exactly the columns it was
// given, or an error wrapping idem.ErrCorruptRecord.
func FuzzRowRecord(f *testing.F) {
	fp := idem.Fingerprint{1, 2, 3}
	ok := idem.EncodeResponse(&idem.Response{Status: 201, Header: map[string][]string{"A": {"b"}}, Body: []byte("body")})
	f.Add("in_progress", fp[:], int64(5), int64(0), true, int64(1700000000000), []byte(nil), false, int64(1700000060000))
	f.Add("completed", fp[:], int64(7), int64(5), false, int64(0), ok, true, int64(1700000060000))
	f.Add("failed", fp[:], int64(9), int64(0), false, int64(0), ok, true, int64(0))
	f.Add("bogus", []byte{1, 2}, int64(-5), int64(-1), true, int64(-1), []byte{0xde, 0xad, 0xbe, 0xef}, true, int64(-1))
	f.Add("completed", fp[:], int64(1), int64(0), true, int64(1), ok[:3], true, int64(1))
	f.Fuzz(func(t *testing.T, status string, fpb []byte, token, prev int64, hasLease bool, leaseMS int64, response []byte, hasResp bool, expMS int64) {
		r := row{status: status, fingerprint: fpb, token: token, prevToken: prev, expiresAt: time.UnixMilli(expMS)}
		if hasLease {
			le := time.UnixMilli(leaseMS)
			r.leaseExpiry = &le
		}
		if hasResp {
			r.response = response
			if r.response == nil {
				r.response = []byte{}
			}
		}
		rec, err := r.record("k")
		if !storetest.Decoded(t, rec, err) {
			return
		}
		if rec.Key != "k" || rec.Status.String() != status || !bytes.Equal(rec.Fingerprint[:], fpb) ||
			int64(rec.Token) != token || !rec.ExpiresAt.Equal(r.expiresAt) {
			t.Fatalf("record %+v from row %+v", rec, r)
		}
		if hasLease != !rec.LeaseExpiry.IsZero() && !(hasLease && time.UnixMilli(leaseMS).IsZero()) {
			t.Fatalf("lease expiry %v from row lease %v", rec.LeaseExpiry, r.leaseExpiry)
		}
		if hasResp != (rec.Response != nil) {
			t.Fatalf("response column set %v, decoded response %v", hasResp, rec.Response)
		}
		if hasResp && !bytes.Equal(idem.EncodeResponse(rec.Response), r.response) {
			t.Fatalf("response %x decodes to %+v, which encodes differently", r.response, rec.Response)
		}
	})
}
