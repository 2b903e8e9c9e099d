package history

import (
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestRespDigestAndFingerprintID(t *testing.T) {
	a := &idem.Response{Status: 200, Header: map[string][]string{"A": {"1"}, "B": {"2"}}, Body: []byte("ok")}
	b := &idem.Response{Status: 200, Header: map[string][]string{"B": {"2"}, "A": {"1"}}, Body: []byte("ok")}
	c := &idem.Response{Status: 201, Body: []byte("ok")}
	if RespDigest(a) != RespDigest(b) || len(RespDigest(a)) != 64 {
		t.Errorf("equal responses digest differently: %s %s", RespDigest(a), RespDigest(b))
	}
	if RespDigest(a) == RespDigest(c) {
		t.Error("different responses share a digest")
	}
	if RespDigest(nil) != "" {
		t.Error("nil response has a digest")
	}
	fp := idem.FingerprintString("POST", "/pay", "100")
	if id := FingerprintID(fp); len(id) != 16 || id != fp.String()[:16] {
		t.Errorf("FingerprintID = %q", id)
	}
	if FingerprintID(idem.Fingerprint{}) != "" {
		t.Error("zero fingerprint has an id")
	}
}
