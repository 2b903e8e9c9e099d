package idem

import (
	"fmt"
)

// MaxKeyLen is the longest accepted key, in bytes, including any scope prefix.
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
			return fmt.Errorf("%w: byte %#02x at offset %d is not printable ASCII", ErrInvalidKey, c, i)
		}
	}
	return nil
}

// ScopedKey prefixes key with scope and ScopeSeparator, so that tenants
// sharing one store cannot collide. An empty scope returns key unchanged. The
// result must still pass ValidateKey; the scope itself must not be empty of
// printable characters or contain the separator.
func ScopedKey(scope, key string) (string, error) {
	if scope == "" {
		return key, ValidateKey(key)
	}
	for i := 0; i < len(scope); i++ {
		if scope[i] == ScopeSeparator {
			return "", fmt.Errorf("%w: scope %q contains %q", ErrInvalidKey, scope, ScopeSeparator)
		}
	}
	k := scope + string(ScopeSeparator) + key
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return k, ValidateKey(k)
}
