package idemhttp_test

import (
	"strings"
	"testing"

	"github.com/idembench/idembench/idem/idemhttp"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		in, want string // want "" means refused
	}{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{" {\n\t\"a\" : [ 1 , 2 ] } ", `{"a":[1,2]}`},
		{`{"z":{"y":1,"x":[{"b":true,"a":null}]}}`, `{"z":{"x":[{"a":null,"b":true}],"y":1}}`},
		{`"\u0041"`, `"A"`},
		{`"é"`, `"é"`},
		{`"\u00e9"`, `"é"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`{"a<b":"&"}`, `{"a\u003cb":"\u0026"}`},
		{`1.0`, `1.0`},
		{`1e2`, `1e2`},
		{`12345678901234567890123`, `12345678901234567890123`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`false`, `false`},
		{`{"":1,"a":2}`, `{"":1,"a":2}`},

		{`{"a":1,"a":1}`, ""}, // repeated member
		{`{"a":1,"b":{"c":1,"c":2}}`, ""},
		{`"\ud800"`, ""},   // lone surrogate decodes to U+FFFD
		{`"\ufffd"`, ""},   // U+FFFD cannot be told from a replaced one
		{"\"\xff\"", ""},   // invalid UTF-8
		{`{"a":1} {}`, ""}, // trailing value
		{`{"a":1}x`, ""},
		{`[1 2]`, ""},
		{`[1,]`, ""},
		{`{"a" 1}`, ""},
		{`{"a":1,}`, ""},
		{`{1:2}`, ""},
		{``, ""},
		{`nul`, ""},
		{`01`, ""},
		{`[` + strings.Repeat("[", idemhttp.MaxJSONDepth) + strings.Repeat("]", idemhttp.MaxJSONDepth+1), ""},
	}
	for _, tt := range tests {
		got, err := idemhttp.CanonicalJSON([]byte(tt.in))
		if tt.want == "" {
			if err == nil {
				t.Errorf("CanonicalJSON(%q) = %q, want refusal", tt.in, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalJSONDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", idemhttp.MaxJSONDepth) + strings.Repeat("]", idemhttp.MaxJSONDepth)
	if _, err := idemhttp.CanonicalJSON([]byte(ok)); err != nil {
		t.Fatalf("depth %d refused: %v", idemhttp.MaxJSONDepth, err)
	}
}

// FuzzCanonicalJSON checks that canonicalization is idempotent and never
// panics.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `1.5e3`, `"\u00e9"`, `{"a":{"a":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := idemhttp.CanonicalJSON(b)
		if err != nil {
			return
		}
		c2, err := idemhttp.CanonicalJSON(c)
		if err != nil || string(c2) != string(c) {
			t.Fatalf("canonical form %q re-canonicalizes to %q, %v", c, c2, err)
		}
	})
}
