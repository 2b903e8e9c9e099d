package redisstore

import (
	"fmt"
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
type multiScript struct {
	one          *redis.Script
	multi        *redis.Script
	nkeys, nargs int
}

// maxMultiKeys bounds the keys of one multi-script call, so that one call
// does not hold the server for long.
const maxMultiKeys = 128

// newMultiScript builds the multi-key form of one (prelude + body, where
// body uses KEYS[1..nkeys] and ARGV[1..nargs] and returns its reply).
func newMultiScript(one *redis.Script, prelude, body string, nkeys, nargs int) multiScript {
	var params []string
	for i := nkeys; i >= 1; i-- {
		body = strings.ReplaceAll(body, fmt.Sprintf("KEYS[%d]", i), fmt.Sprintf("k%d", i))
	}
	for i := nargs; i >= 1; i-- {
		body = strings.ReplaceAll(body, fmt.Sprintf("ARGV[%d]", i), fmt.Sprintf("a%d", i))
	}
	var callArgs []string
	for i := 1; i <= nkeys; i++ {
		params = append(params, fmt.Sprintf("k%d", i))
		callArgs = append(callArgs, fmt.Sprintf("KEYS[i*%d+%d]", nkeys, i))
	}
	for i := 1; i <= nargs; i++ {
		params = append(params, fmt.Sprintf("a%d", i))
		callArgs = append(callArgs, fmt.Sprintf("ARGV[i*%d+%d]", nargs, i))
	}
	src := prelude + "\nlocal function one(" + strings.Join(params, ", ") + ")\n" + body + "\nend\n" +
		fmt.Sprintf("local out = {}\nfor i = 0, #KEYS / %d - 1 do\n  out[i+1] = one(%s)\nend\nreturn out\n", nkeys, strings.Join(callArgs, ", "))
	return multiScript{one: one, multi: redis.NewScript(src), nkeys: nkeys, nargs: nargs}
}

// luaClockOnce is luaClock for a multi-key call: now() reads the server
// clock once and answers the same time for every key, as the whole call is
// one atomic step (Redis itself judges key expiry inside a script by the
// time the script started). It saves a TIME call per key.
const luaClockOnce = `
local clock
local function now()
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock
end
local function fmt(n) return string.format('%d', n) end
`

var (
	multiAcquire = newMultiScript(acquireScript, luaClockOnce, acquireBody, 2, 5)
	multiFinish  = newMultiScript(finishScript, "", finishBody, 1, 5)
	multiRelease = newMultiScript(releaseScript, "", releaseBody, 1, 1)
)

// merge groups calls of the same script into multi-key calls, at most
// maxMultiKeys each, when the store's client is a single Redis; on any
// other client (a Cluster, a Ring) every call stays on its own. A merged
// call's idx lists the batch entries it answers, in order.
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
		if !ok || len(out[k].idx) == maxMultiKeys {
			out = append(out, scriptCall{script: m.multi, multi: true, i: -1})
			k = len(out) - 1
			open[c.script] = k
		}
		g := &out[k]
		g.idx = append(g.idx, c.i)
		g.keys = append(g.keys, c.keys...)
		g.args = append(g.args, c.args...)
	}
	return out
}

// replies returns the per-entry replies of a call: its own reply, or, for
// a merged call, the elements of its list; err applies to every entry.
func (c *scriptCall) replies() (idx []int, res []any, err error) {
	if !c.multi {
		v, err := c.cmd.Result()
		return []int{c.i}, []any{v}, err
	}
	list, err := c.cmd.Slice()
	if err == nil && len(list) != len(c.idx) {
		err = fmt.Errorf("redisstore: multi-key script answered %d replies for %d keys", len(list), len(c.idx))
	}
	if err != nil {
		// Not the error of any one key: the keys before the failing one
		// may have been written (a script is not rolled back).
		return c.idx, make([]any, len(c.idx)), fmt.Errorf("redisstore: multi-key script: %v", err)
	}
	return c.idx, list, nil
}
