package idem

import (
	"fmt"
	"strings"
)

// MaxKeyLen is the longest accepted key, in bytes, as stored: scope
// prefixes, separators and the escape byte of StorageKey included.
const MaxKeyLen = 255

// ScopeSeparator joins a scope (tenant, namespace) and a key.
const ScopeSeparator = ':'

// ValidateKey checks the key rules: 1 to MaxKeyLen bytes, printable ASCII only
// (0x21..0x7E; no spaces or control characters). The error wraps
// ErrInvalidKey and says which rule was broken.
func ValidateKey(key string) error {
	if len(key) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: %s at offset %d; a key holds printable ASCII only, without spaces (0x21 to 0x7e)",
				ErrInvalidKey, describeByte(c), i)
		}
	}
	return nil
}

// describeByte names a byte a key may not hold in words a user
// recognises: "a space", "a tab", "a control byte 0x07", "a non-ASCII
// byte 0xc3".
func describeByte(c byte) string {
	switch {
	case c == ' ':
		return "a space"
	case c == '\t':
		return "a tab"
	case c == '\n' || c == '\r':
		return fmt.Sprintf("a line break (%#02x)", c)
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("a control byte %#02x", c)
	}
	return fmt.Sprintf("a non-ASCII byte %#02x", c)
}

// ScopedKey returns the key under which the store keeps key in scope: it is
// StorageKey(key, scope). An empty scope is the unscoped namespace, which is
// disjoint from every named scope.
func ScopedKey(scope, key string) (string, error) {
	return StorageKey(key, scope)
}

// StorageKey maps a caller's key and its scopes (outermost first, such as
// the engine's WithScope and then a request's tenant; empty scopes are
// skipped) to the key the store keeps. Different (scopes, key) pairs never
// map to one stored key, whatever characters the key holds, so a caller
// cannot reach another scope's records by putting the separator in its key:
//
//	scopes  key       stored
//	—       "k1"      "k1"            (keys without ':' are stored as given)
//	—       "a:k1"    ":a:k1"         (a key with ':' gets a leading ':')
//	"a"     "k1"      "a:k1"
//	"a"     "b:k1"    "a::b:k1"
//	"a","b" "k1"      "a:b:k1"
//
// The stored form decodes uniquely: scopes are non-empty and hold no ':',
// so "::" (or a leading ':') appears only where an escaped key begins.
// Scopes must be printable ASCII without ScopeSeparator; key and result must
// pass ValidateKey (the result counts against MaxKeyLen). Errors wrap
// ErrInvalidKey.
func StorageKey(key string, scopes ...string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	n, named := len(key), 0
	for _, s := range scopes {
		if s == "" {
			continue
		}
		if strings.IndexByte(s, ScopeSeparator) >= 0 {
			return "", fmt.Errorf("%w: scope %q contains %q", ErrInvalidKey, s, ScopeSeparator)
		}
		n += len(s) + 1
		named++
	}
	escape := strings.IndexByte(key, ScopeSeparator) >= 0
	if named == 0 && !escape {
		return key, nil
	}
	if escape {
		n++
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range scopes {
		if s != "" {
			b.WriteString(s)
			b.WriteByte(ScopeSeparator)
		}
	}
	if escape {
		b.WriteByte(ScopeSeparator)
	}
	b.WriteString(key)
	k := b.String()
	if err := ValidateKey(k); err != nil {
		return "", fmt.Errorf("%w (scoped %q)", err, k)
	}
	return k, nil
}
