package idemhttp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idembench/idembench/idem"
)

// ErrKeySyntax is wrapped by ParseKey's errors: the header value is not a
// single RFC 8941 string (or a bare key, see ParseKey).
var ErrKeySyntax = errors.New("idemhttp: Idempotency-Key is not a structured-field string")

// ParseKey returns the key an Idempotency-Key header value names. The
// IETF draft (draft-ietf-httpapi-idempotency-key-header) defines the field
// as an RFC 8941 Item whose value is a String, so the canonical form is
// quoted: `"8e03978e-40d5-43e8-bc93-6894a57f9324"`. Inside the quotes `\"`
// and `\\` are the only escapes, and only 0x20..0x7E may appear.
//
// For the clients that send the key without quotes, a bare value names the
// same key as its quoted form: `abc` and `"abc"` are one key. A bare value
// is taken as it is (UUIDs and other keys that are not RFC 8941 tokens
// included), provided it holds none of the characters that give the value
// structure: no ',' (a list), ';' (parameters), '"', '\\', '(' (an inner
// list) or whitespace.
//
// Leading and trailing spaces and tabs are ignored, as RFC 8941 parsing
// does. Lists ("a", "b"), parameters ("a";v=1), unterminated strings,
// bad escapes and characters outside 0x20..0x7E return an error wrapping
// ErrKeySyntax. An empty result ("" or an empty bare value) is returned
// without error: the key rules of idem.ValidateKey refuse it, as they
// refuse a quoted key that holds a space.
func ParseKey(value string) (string, error) {
	v := strings.Trim(value, " \t")
	if v == "" || v[0] != '"' {
		return parseBare(v)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("%w: bad escape at offset %d", ErrKeySyntax, i)
			}
			b.WriteByte(v[i])
		case c == '"':
			if rest := v[i+1:]; rest != "" {
				return "", fmt.Errorf("%w: %s after the string", ErrKeySyntax, what(rest))
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: byte %#02x at offset %d", ErrKeySyntax, c, i)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated string", ErrKeySyntax)
}

// parseBare checks an unquoted value.
func parseBare(v string) (string, error) {
	if i := strings.IndexAny(v, ",;\"\\( \t"); i >= 0 {
		return "", fmt.Errorf("%w: %s in an unquoted key", ErrKeySyntax, what(v[i:]))
	}
	return v, nil
}

// what names the structure that rest begins.
func what(rest string) string {
	t := strings.TrimLeft(rest, " \t")
	if t == "" {
		return "whitespace"
	}
	switch t[:1] {
	case ",":
		return "a list"
	case ";":
		return "parameters"
	case "(":
		return "an inner list"
	}
	return fmt.Sprintf("%q", t[:1])
}

// keyLimit returns the most bytes key may hold when it is stored under
// scopes (idem.StorageKey, whose result counts against idem.MaxKeyLen):
// MaxKeyLen less len(scope)+1 for each non-empty scope, less 1 more when
// key contains idem.ScopeSeparator (StorageKey escapes such a key with one
// byte).
func keyLimit(key string, scopes ...string) int {
	n := idem.MaxKeyLen
	for _, s := range scopes {
		if s != "" {
			n -= len(s) + 1
		}
	}
	if strings.IndexByte(key, idem.ScopeSeparator) >= 0 {
		n--
	}
	return n
}
