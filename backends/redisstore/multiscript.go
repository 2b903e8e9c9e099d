package redisstore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// multiScript runs a single-key transition script for several keys in one
// call: the script's body becomes a Lua function of its keys and
// arguments, called once per key in order, and the call returns the list of
// the per-key replies. Each key is still one atomic step (the whole call
// is), and the per-key logic is the single-key script's own text, not a
// second copy. A call's keys must live on one server: the store uses it on
// a single Redis (not a Cluster, where only keys of one hash slot could
// share a call).
//
// Arguments that are the same for every key of a call (a TTL, the call
// id) are sent once, before the per-key ones, so that the server parses and
// the Lua code converts them once per call, not once per key.
type multiScript struct {
	one    *redis.Script
	multi  *redis.Script
	shared []int // the body's ARGV positions sent once per call, in order
	headed bool  // the reply's first element is the call's, not a key's
	// expand, when set, turns a per-key reply of the multi script back
	// into the single-key script's reply; head is the call's first reply
	// element (see multiSpec.head).
	expand func(head, reply any) any
}

// multiSpec describes a multi-key form of a single-key script.
type multiSpec struct {
	one          *redis.Script
	prelude      string // Lua run first: helpers the body and fast use
	body         string // the single-key script's body: KEYS[1..nkeys], ARGV[1..nargs]
	nkeys, nargs int
	shared       []int // ARGV positions of body that are the same for every key
	// setup is Lua run once per call after the shared arguments are bound
	// to a<position>; head, when set, is a Lua expression (of setup's
	// locals) that becomes the reply's first element.
	setup, head string
	// fast, when set, is a Lua expression tried for each key before the
	// body, with the key's names and arguments bound to k<i> and a<j>: its
	// value is the key's reply unless it is nil, when the body runs. It
	// serves the common case with less work; it must decide exactly as the
	// body would.
	fast   string
	expand func(head, reply any) any
}

// maxMultiKeys bounds the keys of one multi-script call, so that one call
// does not hold the server for long.
const maxMultiKeys = 128

// newMultiScript builds the multi-key form of sp.
func newMultiScript(sp multiSpec) multiScript {
	body := sp.body
	for i := sp.nkeys; i >= 1; i-- {
		body = strings.ReplaceAll(body, fmt.Sprintf("KEYS[%d]", i), fmt.Sprintf("k%d", i))
	}
	for i := sp.nargs; i >= 1; i-- {
		body = strings.ReplaceAll(body, fmt.Sprintf("ARGV[%d]", i), fmt.Sprintf("a%d", i))
	}
	perKey := sp.nargs - len(sp.shared)
	var params, keyNames, keyVals, argNames, argVals, sharedNames, sharedVals []string
	for i := 1; i <= sp.nkeys; i++ {
		params = append(params, fmt.Sprintf("k%d", i))
		keyNames = append(keyNames, fmt.Sprintf("k%d", i))
		keyVals = append(keyVals, fmt.Sprintf("KEYS[i*%d+%d]", sp.nkeys, i))
	}
	for i, p := range sp.shared {
		sharedNames = append(sharedNames, fmt.Sprintf("a%d", p))
		sharedVals = append(sharedVals, fmt.Sprintf("ARGV[%d]", i+1))
	}
	n := 0
	for i := 1; i <= sp.nargs; i++ {
		params = append(params, fmt.Sprintf("a%d", i))
		if slices.Contains(sp.shared, i) {
			continue
		}
		n++
		argNames = append(argNames, fmt.Sprintf("a%d", i))
		argVals = append(argVals, fmt.Sprintf("ARGV[%d+i*%d+%d]", len(sp.shared), perKey, n))
	}
	var b strings.Builder
	b.WriteString(sp.prelude + "\nlocal function one(" + strings.Join(params, ", ") + ")\n" + body + "\nend\n")
	if len(sharedNames) > 0 {
		b.WriteString("local " + strings.Join(sharedNames, ", ") + " = " + strings.Join(sharedVals, ", ") + "\n")
	}
	b.WriteString(sp.setup + "\n")
	first := 1
	if sp.head != "" {
		b.WriteString("local out = {" + sp.head + "}\n")
		first = 2
	} else {
		b.WriteString("local out = {}\n")
	}
	fmt.Fprintf(&b, "for i = 0, #KEYS / %d - 1 do\n", sp.nkeys)
	b.WriteString("  local " + strings.Join(keyNames, ", ") + " = " + strings.Join(keyVals, ", ") + "\n")
	if len(argNames) > 0 {
		b.WriteString("  local " + strings.Join(argNames, ", ") + " = " + strings.Join(argVals, ", ") + "\n")
	}
	call := "one(" + strings.Join(params, ", ") + ")"
	if sp.fast != "" {
		b.WriteString("  local r = " + sp.fast + "\n  if r == nil then r = " + call + " end\n")
	} else {
		b.WriteString("  local r = " + call + "\n")
	}
	fmt.Fprintf(&b, "  out[i+%d] = r\nend\nreturn out\n", first)
	return multiScript{one: sp.one, multi: redis.NewScript(b.String()), shared: sp.shared, headed: sp.head != "", expand: sp.expand}
}

// luaClockOnce is luaClock for a multi-key call: now() reads the server
// clock once and answers the same time for every key, as the whole call is
// one atomic step (Redis itself judges key expiry inside a script by the
// time the script started). It saves a TIME call per key.
const luaClockOnce = `
local clock, clockUp
local function now()
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    clockUp = tonumber(t[2]) % 1000 > 0 and clock + 1 or clock
  end
  return clock, clockUp
end
local function fmt(n) return string.format('%d', n) end
`

var (
	// multiAcquire claims an absent key with claim() directly (the body
	// would do the same after its TYPE) and answers it with the bare
	// token: the lease expiry, the same for every key of the call, is the
	// reply's first element, and the previous token is 0. Every other key
	// runs the body and answers its table.
	multiAcquire = newMultiScript(multiSpec{
		one: acquireScript, prelude: luaClockOnce + luaRecord + luaClaim, body: acquireBody, nkeys: 2, nargs: 6,
		shared: []int{2, 3, 4}, // lease TTL, grace, call id
		setup:  "local _, up = now()\nlocal lease = up + tonumber(a2)\nlocal leaseS, expiry = fmt(lease), lease + tonumber(a3)",
		head:   "lease",
		fast:   "redis.call('EXISTS', k1) == 0 and claim(k1, k2, a1, tonumber(a5), '0', leaseS, expiry, a4, a6) or nil",
		expand: func(head, reply any) any {
			if tok, ok := reply.(string); ok {
				return []any{int64(resultApplied), tok, "0", head}
			}
			return reply
		},
	})
	multiFinish = newMultiScript(multiSpec{
		one: finishScript, prelude: luaRecord, body: finishBody, nkeys: 1, nargs: 5,
		shared: []int{4, 5}, // retention, call id
	})
	multiRelease = newMultiScript(multiSpec{one: releaseScript, prelude: luaRecord, body: releaseBody, nkeys: 1, nargs: 1})
)

// merge groups calls of the same script into multi-key calls, at most
// maxMultiKeys each, when the store's client is a single Redis; on any
// other client (a Cluster, a Ring) every call stays on its own. A merged
// call's idx lists the batch entries it answers, in order. Calls share a
// multi-key call only when they agree on its shared arguments; the batch
// methods build them so.
func (s *Store) merge(calls []scriptCall, multis ...multiScript) []scriptCall {
	if _, single := s.client.(*redis.Client); !single || len(calls) < 2 {
		return calls
	}
	var out []scriptCall
	open := map[*redis.Script]int{} // script → index in out of the call being filled
	for _, c := range calls {
		var m *multiScript
		for j := range multis {
			if multis[j].one == c.script {
				m = &multis[j]
			}
		}
		if m == nil {
			out = append(out, c)
			continue
		}
		k, ok := open[c.script]
		if ok && (len(out[k].idx) == maxMultiKeys || !m.sameShared(out[k].args, c.args)) {
			ok = false
		}
		if !ok {
			g := scriptCall{script: m.multi, multi: m, i: -1}
			for _, p := range m.shared {
				g.args = append(g.args, c.args[p-1])
			}
			out = append(out, g)
			k = len(out) - 1
			open[c.script] = k
		}
		g := &out[k]
		g.idx = append(g.idx, c.i)
		g.keys = append(g.keys, c.keys...)
		for p, a := range c.args {
			if !slices.Contains(m.shared, p+1) {
				g.args = append(g.args, a)
			}
		}
	}
	return out
}

// sameShared reports whether a single-key call's args carry the shared
// values a merged call's args begin with.
func (m *multiScript) sameShared(merged, args []any) bool {
	for i, p := range m.shared {
		if merged[i] != args[p-1] {
			return false
		}
	}
	return true
}

// replies returns the per-entry replies of a call, each in the shape of the
// single-key script's reply: its own reply, or, for a merged call, the
// elements of its list; err applies to every entry.
func (c *scriptCall) replies() (idx []int, res []any, err error) {
	if c.multi == nil {
		v, err := c.cmd.Result()
		return []int{c.i}, []any{v}, err
	}
	list, err := c.cmd.Slice()
	var head any
	if err == nil && c.multi.headed {
		if len(list) == 0 {
			err = fmt.Errorf("redisstore: multi-key script answered no head")
		} else {
			head, list = list[0], list[1:]
		}
	}
	if err == nil && len(list) != len(c.idx) {
		err = fmt.Errorf("redisstore: multi-key script answered %d replies for %d keys", len(list), len(c.idx))
	}
	if err != nil {
		// Not the error of any one key: the keys before the failing one
		// may have been written (a script is not rolled back).
		return c.idx, make([]any, len(c.idx)), fmt.Errorf("redisstore: multi-key script: %v", err)
	}
	if c.multi.expand != nil {
		for n := range list {
			list[n] = c.multi.expand(head, list[n])
		}
	}
	return c.idx, list, nil
}
