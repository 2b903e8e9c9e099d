package workload_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/workload"
)

// TestKeyPrefixProblem: a key prefix that breaks a key rule is refused in
// words — "a space", "a tab", the byte's position and what a key may hold
// — not as "byte 0x20 … is not printable ASCII".
func TestKeyPrefixProblem(t *testing.T) {
	cases := []struct {
		prefix string
		want   string
	}{
		{"my run", `"my run" has a space at byte 2`},
		{"a\tb", "has a tab at byte 1"},
		{"é", "has a non-ASCII byte (0xc3) at byte 0"},
		{"a\x01", "has a control character (0x01) at byte 1"},
		{strings.Repeat("k", 300), "300 bytes"},
	}
	for _, c := range cases {
		_, err := workload.Check(workload.Config{Duration: time.Second, Keys: workload.Keys{Prefix: c.prefix}})
		var fe *workload.FieldError
		if !errors.As(err, &fe) || fe.Field != "keys.prefix" {
			t.Fatalf("prefix %q: %v; want a keys.prefix FieldError", c.prefix, err)
		}
		for _, w := range []string{c.want, "printable ASCII, '!' to '~'", "no spaces or control characters"} {
			if !strings.Contains(fe.Problem, w) {
				t.Errorf("prefix %q: problem %q lacks %q", c.prefix, fe.Problem, w)
			}
		}
		if strings.Contains(fe.Problem, "0x20") {
			t.Errorf("prefix %q: problem %q names a space by its code", c.prefix, fe.Problem)
		}
	}
}
