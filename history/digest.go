package history

import (
	"encoding/hex"

	"github.com/idembench/idembench/idem"
)

// RespDigest returns the value for Op.Resp: the hex SHA-256 of r's
// canonical encoding (idem.Response.Digest), so two responses compare equal
// exactly when the engine would consider them equal. A nil response gives
// "".
func RespDigest(r *idem.Response) string {
	if r == nil {
		return ""
	}
	d := r.Digest()
	return hex.EncodeToString(d[:])
}

// FingerprintID returns the value for Op.FP: the first 8 bytes of fp in hex
// (16 characters), enough to tell the fingerprints of one run apart. The
// zero fingerprint gives "".
func FingerprintID(fp idem.Fingerprint) string {
	if fp.IsZero() {
		return ""
	}
	return hex.EncodeToString(fp[:8])
}
