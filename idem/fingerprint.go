package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Fingerprint identifies the request that first used a key: a SHA-256 over
// caller-chosen request bytes. The zero Fingerprint means "not computed"; it
// only equals another zero Fingerprint.
type Fingerprint [sha256.Size]byte

// NewFingerprint hashes parts into a Fingerprint. Each part is length-prefixed,
// so ("ab","c") and ("a","bc") differ.
func NewFingerprint(parts ...[]byte) Fingerprint {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var fp Fingerprint
	h.Sum(fp[:0])
	return fp
}

// FingerprintString is NewFingerprint over strings, without copying them.
func FingerprintString(parts ...string) Fingerprint {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var fp Fingerprint
	h.Sum(fp[:0])
	return fp
}

// IsZero reports whether fp is the zero Fingerprint.
func (fp Fingerprint) IsZero() bool { return fp == Fingerprint{} }

// String returns fp as lowercase hex.
func (fp Fingerprint) String() string { return hex.EncodeToString(fp[:]) }

// ParseFingerprint decodes the form written by String: exactly 64
// lowercase hex digits. Anything else, uppercase digits included, returns
// an error wrapping ErrCorruptRecord, since fingerprints are parsed from
// stored data and a store compares them in their written form.
func ParseFingerprint(s string) (Fingerprint, error) {
	var fp Fingerprint
	if len(s) != 2*len(fp) {
		return fp, fmt.Errorf("%w: fingerprint has %d hex digits, want %d", ErrCorruptRecord, len(s), 2*len(fp))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fp, fmt.Errorf("%w: fingerprint: byte %#02x at offset %d is not a lowercase hex digit", ErrCorruptRecord, c, i)
		}
	}
	if _, err := hex.Decode(fp[:], []byte(s)); err != nil {
		return fp, fmt.Errorf("%w: fingerprint: %v", ErrCorruptRecord, err)
	}
	return fp, nil
}
