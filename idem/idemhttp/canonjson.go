package idemhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxJSONDepth is the deepest nesting of arrays and objects CanonicalJSON
// accepts.
const MaxJSONDepth = 256

// errNotCanonicalizable is wrapped by every CanonicalJSON error.
var errNotCanonicalizable = errors.New("idemhttp: JSON not canonicalizable")

// CanonicalJSON returns a canonical encoding of the single JSON value in b:
// object members sorted by name (byte order of the decoded names),
// insignificant whitespace removed, strings re-encoded from their decoded
// value. Two inputs with the same canonical form are the same JSON value.
//
// It is deliberately strict, so that two different values never share a
// canonical form:
//   - numbers keep their literal text: 1, 1.0 and 1e0 differ (no float
//     rounding can merge two large integers);
//   - an object with a repeated member name is refused (parsers disagree on
//     which one wins);
//   - input that is not valid UTF-8, or a string that decodes to U+FFFD
//     (for example an escaped lone surrogate, which the decoder replaces),
//     is refused;
//   - nesting deeper than MaxJSONDepth, and trailing data after the value,
//     are refused.
//
// A refused or invalid input returns an error; the default fingerprint then
// falls back to the raw bytes.
func CanonicalJSON(b []byte) ([]byte, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: not valid UTF-8", errNotCanonicalizable)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(b))
	if err := canonValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON value", errNotCanonicalizable)
	}
	return out.Bytes(), nil
}

// canonValue reads one value from dec and writes its canonical form.
func canonValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errNotCanonicalizable, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxJSONDepth {
			return fmt.Errorf("%w: nested deeper than %d", errNotCanonicalizable, MaxJSONDepth)
		}
		if t == '[' {
			return canonArray(dec, out, depth+1)
		}
		if t == '{' {
			return canonObject(dec, out, depth+1)
		}
		return fmt.Errorf("%w: unexpected %q", errNotCanonicalizable, t)
	case string:
		return canonString(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("%w: unexpected token %T", errNotCanonicalizable, tok)
	}
	return nil
}

func canonArray(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := canonValue(dec, out, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return fmt.Errorf("%w: %v", errNotCanonicalizable, err)
	}
	out.WriteByte(']')
	return nil
}

type member struct {
	name  string
	value []byte
}

func canonObject(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", errNotCanonicalizable, err)
		}
		name, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%w: object member name is %T", errNotCanonicalizable, tok)
		}
		var v bytes.Buffer
		if err := canonValue(dec, &v, depth); err != nil {
			return err
		}
		members = append(members, member{name: name, value: v.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fmt.Errorf("%w: %v", errNotCanonicalizable, err)
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].name == m.name {
				return fmt.Errorf("%w: repeated member %q", errNotCanonicalizable, m.name)
			}
			out.WriteByte(',')
		}
		if err := canonString(out, m.name); err != nil {
			return err
		}
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// canonString writes s as a JSON string. s is a decoded string; U+FFFD in
// it may stand for an invalid escape the decoder replaced, so it is refused.
func canonString(out *bytes.Buffer, s string) error {
	if strings.ContainsRune(s, utf8.RuneError) {
		return fmt.Errorf("%w: string contains U+FFFD", errNotCanonicalizable)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotCanonicalizable, err)
	}
	out.Write(b)
	return nil
}
