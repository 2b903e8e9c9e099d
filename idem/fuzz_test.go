package idem_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/idembench/idembench/idem"
)

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"", "a", "order-123", "tenant:key", "with space", "\x00", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := idem.ValidateKey(key)
		valid := len(key) >= 1 && len(key) <= idem.MaxKeyLen
		for i := 0; i < len(key); i++ {
			if key[i] < 0x21 || key[i] > 0x7e {
				valid = false
			}
		}
		if valid != (err == nil) {
			t.Fatalf("ValidateKey(%q) = %v, want valid=%v", key, err, valid)
		}
		if err != nil && !errors.Is(err, idem.ErrInvalidKey) {
			t.Fatalf("error %v does not wrap ErrInvalidKey", err)
		}
	})
}

// FuzzStorageKeyInjective checks that different (scopes, key) pairs never
// map to one stored key: the tenant-isolation property of StorageKey.
func FuzzStorageKeyInjective(f *testing.F) {
	f.Add("alice", "", "k1", "", "", "alice:k1")
	f.Add("a", "b", "k", "a", "", "b:k")
	f.Add("", "a", "k", "a", "", "k")
	f.Add("a", "", ":k", "", "", "a::k")
	f.Fuzz(func(t *testing.T, s1, s2, k, t1, t2, l string) {
		a, errA := idem.StorageKey(k, s1, s2)
		b, errB := idem.StorageKey(l, t1, t2)
		if errA != nil || errB != nil {
			return
		}
		same := k == l && slices.Equal(named(s1, s2), named(t1, t2))
		if (a == b) != same {
			t.Fatalf("StorageKey(%q, %q, %q) = %q and StorageKey(%q, %q, %q) = %q", k, s1, s2, a, l, t1, t2, b)
		}
		if err := idem.ValidateKey(a); err != nil {
			t.Fatalf("stored key %q: %v", a, err)
		}
	})
}

// named drops empty scopes: an empty scope is no scope.
func named(scopes ...string) []string {
	var out []string
	for _, s := range scopes {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(idem.EncodeResponse(&idem.Response{Status: 200}))
	f.Add(idem.EncodeResponse(&idem.Response{Status: 201, Header: map[string][]string{"A": {"1", "2"}}, Body: []byte("body")}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := idem.DecodeResponse(b)
		if err != nil {
			if !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("error %v does not wrap ErrCorruptRecord", err)
			}
			return
		}
		// Whatever decodes re-encodes to the same bytes, and so decodes
		// to the same response again.
		if enc := idem.EncodeResponse(&r); !bytes.Equal(enc, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, r, enc)
		}
		again, err := idem.DecodeResponse(idem.EncodeResponse(&r))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !again.Equal(&r) || !bytes.Equal(again.Body, r.Body) {
			t.Fatalf("round trip changed the response: %+v vs %+v", again, r)
		}
	})
}

func FuzzFingerprintParts(f *testing.F) {
	f.Add("ab", "c")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a+b == "" {
			return
		}
		// Moving bytes across the part boundary must change the fingerprint.
		joined := idem.FingerprintString(a + b)
		split := idem.FingerprintString(a, b)
		if joined == split {
			t.Fatalf("fingerprint of (%q) equals fingerprint of (%q, %q)", a+b, a, b)
		}
		if got, err := idem.ParseFingerprint(split.String()); err != nil || got != split {
			t.Fatalf("ParseFingerprint(String()) = %v, %v", got, err)
		}
	})
}
