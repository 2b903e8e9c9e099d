package idem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

// TestValidateKeyNamesTheByte: a refused key says in words what the
// offending byte is and what a key may hold (before, a space was "byte
// 0x20 at offset 1 is not printable ASCII").
func TestValidateKeyNamesTheByte(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"a b", "a space at offset 1"},
		{"a\tb", "a tab at offset 1"},
		{"ab\n", "a line break (0x0a) at offset 2"},
		{"\x07", "a control byte 0x07 at offset 0"},
		{"caf\xc3\xa9", "a non-ASCII byte 0xc3 at offset 3"},
	} {
		err := idem.ValidateKey(tc.key)
		if !errors.Is(err, idem.ErrInvalidKey) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "printable ASCII only, without spaces") {
			t.Errorf("ValidateKey(%q) = %v; want ErrInvalidKey naming %q and the rule", tc.key, err, tc.want)
		}
	}
	if err := idem.ValidateKey("order-42"); err != nil {
		t.Errorf("ValidateKey(order-42) = %v", err)
	}
}
