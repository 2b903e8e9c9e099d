package idemhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonPointer is a parsed JSON pointer (RFC 6901): its reference tokens,
// unescaped ("~1" is "/", "~0" is "~").
type jsonPointer []string

// parsePointer parses s, which is "" (the whole document) or starts with
// "/". Anything else, and an escape other than ~0 and ~1, is an error.
func parsePointer(s string) (jsonPointer, error) {
	if s == "" {
		return jsonPointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("idemhttp: JSON pointer %q does not start with /", s)
	}
	toks := strings.Split(s[1:], "/")
	for i, t := range toks {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("idemhttp: JSON pointer %q: bad escape", s)
			}
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// step returns the member or element tok of v, and whether there is one.
func step(v any, tok string) (any, bool) {
	switch c := v.(type) {
	case map[string]any:
		x, ok := c[tok]
		return x, ok
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != tok {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

// lookup returns the value p points to in v, and whether there is one.
func (p jsonPointer) lookup(v any) (any, bool) {
	for _, tok := range p {
		var ok bool
		if v, ok = step(v, tok); !ok {
			return nil, false
		}
	}
	return v, true
}

// remove deletes the object member p points to in v, if there is one. A
// pointer to an array element, or to the whole document, removes nothing.
func (p jsonPointer) remove(v any) {
	if len(p) == 0 {
		return
	}
	parent, ok := p[:len(p)-1].lookup(v)
	if !ok {
		return
	}
	if m, ok := parent.(map[string]any); ok {
		delete(m, p[len(p)-1])
	}
}

// jsonSelection is the JSON part of a fingerprint policy.
type jsonSelection struct {
	include, exclude []jsonPointer
}

// newJSONSelection parses the pointers of o.
func newJSONSelection(include, exclude []string) (*jsonSelection, error) {
	if include == nil && exclude == nil {
		return nil, nil
	}
	s := &jsonSelection{}
	for _, p := range include {
		jp, err := parsePointer(p)
		if err != nil {
			return nil, err
		}
		s.include = append(s.include, jp)
	}
	for _, p := range exclude {
		jp, err := parsePointer(p)
		if err != nil {
			return nil, err
		}
		s.exclude = append(s.exclude, jp)
	}
	return s, nil
}

// parts returns the fingerprint parts of canon, a body CanonicalJSON
// accepted: the canonical form of the document without the excluded
// members, then, when pointers are included, only those: each pointer
// with "absent" or the canonical form of its value.
func (s *jsonSelection) parts(canon []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber() // numbers keep their literal text, as CanonicalJSON does
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	for _, p := range s.exclude {
		p.remove(doc)
	}
	if s.include == nil {
		c, err := canonicalValue(doc)
		return []string{"json-excl", c}, err
	}
	out := []string{"json-incl"}
	for i, p := range s.include {
		v, ok := p.lookup(doc)
		if !ok {
			out = append(out, strconv.Itoa(i), "absent")
			continue
		}
		c, err := canonicalValue(v)
		if err != nil {
			return nil, err
		}
		out = append(out, strconv.Itoa(i), "present", c)
	}
	return out, nil
}

// canonicalValue encodes v (decoded with UseNumber) and canonicalizes it.
func canonicalValue(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	c, err := CanonicalJSON(bytes.TrimRight(b.Bytes(), "\n"))
	return string(c), err
}
