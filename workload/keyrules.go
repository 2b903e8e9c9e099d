package workload

import (
	"fmt"

	"github.com/idembench/idembench/idem"
)

// keyProblem says in words which key rule (idem.ValidateKey) key breaks,
// and what a key may hold; "" when it breaks none.
func keyProblem(key string) string {
	const allowed = "a key holds 1 to %d bytes of printable ASCII, '!' to '~' (letters, digits and punctuation; no spaces or control characters)"
	rule := fmt.Sprintf(allowed, idem.MaxKeyLen)
	if idem.ValidateKey(key) == nil {
		return ""
	}
	if len(key) == 0 || len(key) > idem.MaxKeyLen {
		return fmt.Sprintf("%d bytes: %s", len(key), rule)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 0x21 && c <= 0x7e {
			continue
		}
		var what string
		switch {
		case c == ' ':
			what = "a space"
		case c == '\t':
			what = "a tab"
		case c == '\n' || c == '\r':
			what = "a line break"
		case c >= 0x80:
			what = fmt.Sprintf("a non-ASCII byte (0x%02x)", c)
		default:
			what = fmt.Sprintf("a control character (0x%02x)", c)
		}
		return fmt.Sprintf("%q has %s at byte %d: %s", key, what, i, rule)
	}
	return rule
}
