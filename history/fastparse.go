package history

import "math"

// parseOpFast parses the compact form AppendOp writes: one object, no
// whitespace, known field names each at most once, strings of printable
// ASCII without escapes, integers without sign tricks or exponents. It
// returns false for anything else, leaving op in an unspecified state, and
// the caller falls back to encoding/json. It must never accept a line that
// encoding/json (with unknown fields disallowed) would reject or decode
// differently; FuzzFastParse checks exactly that.
func parseOpFast(b []byte, op *Op) bool {
	p := fastParser{b: b}
	if !p.byte('{') {
		return false
	}
	if p.peek('}') {
		p.i++
		return p.i == len(p.b)
	}
	var seen uint32
	for {
		name, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		f := fieldIndex(name)
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		if !p.field(f, op) {
			return false
		}
		if p.peek(',') {
			p.i++
			continue
		}
		if !p.byte('}') {
			return false
		}
		return p.i == len(p.b)
	}
}

var fieldNames = [...]string{"kind", "client", "worker", "key", "req", "attempt", "fp", "call", "ret",
	"intended", "outcome", "token", "resp", "exec", "applied", "probe", "fault", "label", "err",
	"transition", "prev_token"}

func fieldIndex(name []byte) int {
	for i, n := range fieldNames {
		if n == string(name) {
			return i
		}
	}
	return -1
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) peek(c byte) bool { return p.i < len(p.b) && p.b[p.i] == c }

func (p *fastParser) byte(c byte) bool {
	if p.peek(c) {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes and returns its
// contents (aliasing the input).
func (p *fastParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := p.b[start:p.i]
			p.i++
			return s, true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// int reads a JSON integer in [lo, hi]: an optional minus, then 0 or a
// digit string without a leading zero, not followed by a fraction or
// exponent.
func (p *fastParser) int(lo, hi int64) (int64, bool) {
	neg := p.byte('-')
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.peek('.') || p.peek('e') || p.peek('E') {
		return 0, false
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 || -int64(v-1)-1 < lo {
			return 0, false
		}
		return -int64(v-1) - 1, true
	}
	if v > uint64(math.MaxInt64) || int64(v) > hi {
		return 0, false
	}
	return int64(v), true
}

func (p *fastParser) uint() (uint64, bool) {
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') || p.peek('.') || p.peek('e') || p.peek('E') {
		return 0, false
	}
	return v, true
}

func (p *fastParser) bool() (bool, bool) {
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

func (p *fastParser) field(f int, op *Op) bool {
	var ok bool
	switch fieldNames[f] {
	case "kind":
		var s []byte
		if s, ok = p.str(); ok {
			ok = op.Kind.UnmarshalText(s) == nil
		}
	case "outcome":
		var s []byte
		if s, ok = p.str(); ok {
			ok = op.Outcome.UnmarshalText(s) == nil
		}
	case "client":
		op.Client, ok = p.intField()
	case "worker":
		op.Worker, ok = p.intField()
	case "attempt":
		op.Attempt, ok = p.intField()
	case "req":
		op.Request, ok = p.int(math.MinInt64, math.MaxInt64)
	case "call":
		op.Call, ok = p.int(math.MinInt64, math.MaxInt64)
	case "ret":
		op.Return, ok = p.int(math.MinInt64, math.MaxInt64)
	case "intended":
		op.Intended, ok = p.int(math.MinInt64, math.MaxInt64)
	case "token":
		op.Token, ok = p.uint()
	case "key":
		op.Key, ok = p.strField()
	case "fp":
		op.FP, ok = p.strField()
	case "resp":
		op.Resp, ok = p.strField()
	case "exec":
		op.Exec, ok = p.strField()
	case "fault":
		var s string
		s, ok = p.strField()
		op.Fault = FaultKind(s)
	case "label":
		op.Label, ok = p.strField()
	case "err":
		op.Err, ok = p.strField()
	case "transition":
		var s string
		s, ok = p.strField()
		op.Transition = Transition(s)
	case "prev_token":
		op.PrevToken, ok = p.uint()
	case "applied":
		op.Applied, ok = p.bool()
	case "probe":
		op.Probe, ok = p.bool()
	}
	return ok
}

func (p *fastParser) intField() (int, bool) {
	v, ok := p.int(math.MinInt, math.MaxInt)
	return int(v), ok
}

func (p *fastParser) strField() (string, bool) {
	s, ok := p.str()
	return string(s), ok
}
