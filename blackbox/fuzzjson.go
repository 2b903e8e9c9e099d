package blackbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
)

// jsonNode is a parsed JSON value that keeps what the fingerprint fuzzer
// rewrites: the order of object members and the literal text of numbers.
type jsonNode struct {
	kind    byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	members []jsonMember
	elems   []*jsonNode
	str     string // a string's decoded value
	lit     string // a number's literal text
}

type jsonMember struct {
	name  string
	value *jsonNode
}

var errNotJSON = errors.New("not a single JSON value")

// parseJSON parses b, one JSON value, keeping member order and number
// literals. Anything else (trailing data, invalid JSON) is errNotJSON.
func parseJSON(b []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := parseValue(dec, 0)
	if err != nil {
		return nil, errNotJSON
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotJSON
	}
	return n, nil
}

func parseValue(dec *json.Decoder, depth int) (*jsonNode, error) {
	if depth > 64 {
		return nil, errNotJSON
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &jsonNode{kind: '{'}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				name, _ := k.(string)
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, jsonMember{name, v})
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &jsonNode{kind: '['}
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, errNotJSON
	case string:
		return &jsonNode{kind: '"', str: t}, nil
	case json.Number:
		return &jsonNode{kind: '0', lit: string(t)}, nil
	case bool:
		if t {
			return &jsonNode{kind: 't'}, nil
		}
		return &jsonNode{kind: 'f'}, nil
	case nil:
		return &jsonNode{kind: 'n'}, nil
	}
	return nil, errNotJSON
}

// clone returns a deep copy of n.
func (n *jsonNode) clone() *jsonNode {
	c := *n
	c.members = make([]jsonMember, len(n.members))
	for i, m := range n.members {
		c.members[i] = jsonMember{m.name, m.value.clone()}
	}
	c.elems = make([]*jsonNode, len(n.elems))
	for i, e := range n.elems {
		c.elems[i] = e.clone()
	}
	return &c
}

// jsonStyle is how encode lays a value out.
type jsonStyle struct {
	indent  string // before each member or element, repeated per level; "" is compact
	colon   string // between a member's name and its value
	newline bool   // a line break before each member or element and the closing bracket
}

var (
	compactStyle = jsonStyle{colon: ":"}
	// spacedStyle differs from any compact or one-line form: a line break
	// and a tab before every member and a space on both sides of colons.
	spacedStyle = jsonStyle{indent: "\t", colon: " : ", newline: true}
)

// encode writes n in style s.
func (n *jsonNode) encode(b *strings.Builder, s jsonStyle, depth int) {
	switch n.kind {
	case '{', '[':
		open, end := byte('{'), byte('}')
		count := len(n.members)
		if n.kind == '[' {
			open, end, count = '[', ']', len(n.elems)
		}
		b.WriteByte(open)
		for i := range count {
			if i > 0 {
				b.WriteByte(',')
			}
			s.breakLine(b, depth+1)
			if n.kind == '{' {
				writeJSONString(b, n.members[i].name)
				b.WriteString(s.colon)
				n.members[i].value.encode(b, s, depth+1)
			} else {
				n.elems[i].encode(b, s, depth+1)
			}
		}
		if count > 0 {
			s.breakLine(b, depth)
		}
		b.WriteByte(end)
	case '"':
		writeJSONString(b, n.str)
	case '0':
		b.WriteString(n.lit)
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	default:
		b.WriteString("null")
	}
}

func (s jsonStyle) breakLine(b *strings.Builder, depth int) {
	if !s.newline {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(s.indent)
	}
}

func writeJSONString(b *strings.Builder, v string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// text returns n encoded in style s.
func (n *jsonNode) text(s jsonStyle) []byte {
	var b strings.Builder
	n.encode(&b, s, 0)
	return []byte(b.String())
}

// walk calls fn on n and every value inside it, parents first.
func (n *jsonNode) walk(fn func(*jsonNode)) {
	fn(n)
	for _, m := range n.members {
		m.value.walk(fn)
	}
	for _, e := range n.elems {
		e.walk(fn)
	}
}

// reorder permutes the members of every object with two or more, never
// leaving one in its order, and reports whether any object was permuted.
func (n *jsonNode) reorder(rng *rand.Rand) bool {
	changed := false
	n.walk(func(x *jsonNode) {
		if len(x.members) < 2 {
			return
		}
		orig := append([]jsonMember(nil), x.members...)
		for range 16 { // members all named alike cannot be reordered
			rng.Shuffle(len(x.members), func(i, j int) { x.members[i], x.members[j] = x.members[j], x.members[i] })
			for i := range orig {
				if orig[i].name != x.members[i].name {
					changed = true
					return
				}
			}
		}
	})
	return changed
}

// renumber writes every number in another literal form of the same value
// (100 as 100.0 or 1e2, 2.5 as 2.50), and reports whether any changed.
func (n *jsonNode) renumber(rng *rand.Rand) bool {
	changed := false
	n.walk(func(x *jsonNode) {
		if x.kind != '0' {
			return
		}
		if alt := otherNumberForm(x.lit, rng); alt != "" {
			x.lit, changed = alt, true
		}
	})
	return changed
}

// otherNumberForm returns another literal of the value of lit, or "" when
// it knows none (a number with an exponent).
func otherNumberForm(lit string, rng *rand.Rand) string {
	if strings.ContainsAny(lit, "eE") {
		return ""
	}
	if strings.Contains(lit, ".") {
		return lit + "0"
	}
	switch rng.IntN(3) {
	case 0:
		return lit + ".0"
	case 1:
		return lit + "e0"
	}
	return lit + ".00"
}

// leaves returns every string, number, boolean and null inside n, with a
// path for messages ("/amount", "/items/0/sku").
func (n *jsonNode) leaves() (nodes []*jsonNode, paths []string) {
	var visit func(x *jsonNode, path string)
	visit = func(x *jsonNode, path string) {
		switch x.kind {
		case '{':
			for _, m := range x.members {
				visit(m.value, path+"/"+strings.ReplaceAll(strings.ReplaceAll(m.name, "~", "~0"), "/", "~1"))
			}
		case '[':
			for i, e := range x.elems {
				visit(e, path+"/"+strconv.Itoa(i))
			}
		default:
			nodes, paths = append(nodes, x), append(paths, path)
		}
	}
	visit(n, "")
	return nodes, paths
}

// retype writes a number or a boolean as a string of the same text (100
// as "100", true as "true") and reports whether n was one.
func (n *jsonNode) retype() bool {
	switch n.kind {
	case '0':
		n.kind, n.str = '"', n.lit
	case 't', 'f':
		n.kind, n.str = '"', map[byte]string{'t': "true", 'f': "false"}[n.kind]
	default:
		return false
	}
	return true
}

// change gives leaf another value of its kind: a number plus one, a
// string with "-x" appended, a boolean negated, null made 0.
func (n *jsonNode) change() {
	switch n.kind {
	case '0':
		if i, err := strconv.ParseInt(n.lit, 10, 64); err == nil && i < 1<<53 {
			n.lit = strconv.FormatInt(i+1, 10)
			return
		}
		f, _ := strconv.ParseFloat(n.lit, 64)
		n.lit = strconv.FormatFloat(f+1, 'g', -1, 64)
	case '"':
		n.str += "-x"
	case 't':
		n.kind = 'f'
	case 'f':
		n.kind = 't'
	default:
		n.kind, n.lit = '0', "0"
	}
}
