package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode feeds arbitrary input to Decode: it must never panic, and what
// it accepts must survive an Encode/Decode round trip unchanged.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, sampleHistory()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(""))
	f.Add([]byte("{}\n{}\n"))
	f.Add([]byte(`{"format":"idembench-history","version":1}` + "\nnull\n"))
	f.Add([]byte(`{"format":"idembench-history","version":1}` + "\n" + `{"kind":"call","call":-0,"ret":1e3,"outcome":"error"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := Decode(bytes.NewReader(in))
		if err != nil {
			if h != nil {
				t.Fatal("history returned with an error")
			}
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, h); err != nil {
			t.Fatalf("decoded history does not encode: %v", err)
		}
		h2, err := Decode(&out)
		if err != nil {
			t.Fatalf("re-encoded history does not decode: %v\n%s", err, out.Bytes())
		}
		if diff := cmp.Diff(h.Ops, h2.Ops); diff != "" {
			t.Fatalf("round trip changed ops (-first +second):\n%s", diff)
		}
	})
}

// FuzzFastParse checks the fast op parser against encoding/json: whatever
// the fast path accepts, encoding/json (unknown fields disallowed) must
// accept and decode to the same Op.
func FuzzFastParse(f *testing.F) {
	for _, op := range sampleHistory().Ops {
		f.Add(AppendOp(nil, &op))
	}
	for _, s := range []string{
		`{}`, `{"client":-0}`, `{"client":01}`, `{"call":9223372036854775808}`, `{"call":-9223372036854775808}`,
		`{"token":18446744073709551616}`, `{"kind":"call","kind":"effect"}`, `{"KIND":"call"}`, `{"applied":tru}`,
		`{"key":"a\u0041"}`, `{"client":1}x`, `{"client":1,}`, `{"worker":null}`, `{"call":1e2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Op
		if !parseOpFast(line, &fast) {
			return
		}
		var slow Op
		if err := strictUnmarshal(line, &slow); err != nil {
			t.Fatalf("fast parser accepted %q, encoding/json rejects it: %v", line, err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("fast parser decodes %q differently (-json +fast):\n%s", line, diff)
		}
	})
}

// TestFastParseRejectsWhatJSONDoes pins a few cases where a naive fast
// parser would differ from encoding/json.
func TestFastParseFallsBack(t *testing.T) {
	for _, s := range []string{
		`{"client":01}`, `{"KIND":"call"}`, `{"kind":"call","kind":"effect"}`, `{"client":1,}`,
		`{"key":"a\u0041"}`, `{"call":1e2}`, `{"worker":null}`, `{ "client":1}`, `{"key":"` + "\xff" + `"}`,
		`{"call":9223372036854775808}`, `{"token":18446744073709551616}`, `{"token":-1}`,
	} {
		var op Op
		if parseOpFast([]byte(s), &op) {
			t.Errorf("fast parser accepted %s", s)
		}
	}
	var op Op
	if !parseOpFast([]byte(`{"call":-9223372036854775808,"ret":-0}`), &op) || op.Call != -1<<63 || op.Return != 0 {
		t.Errorf("extreme ints: %v", op)
	}
	// Sanity: the fast parser handles what Encode writes.
	for _, op := range sampleHistory().Ops {
		line := AppendOp(nil, &op)
		var got Op
		if !strings.ContainsAny(string(line), `\`) && !parseOpFast(line, &got) {
			t.Errorf("fast parser refused Encode output %s", line)
		}
		var want Op
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
	}
}
