// Package redissink is an effect sink whose ledger lives in Redis, so that
// an effect survives the death of the worker process that applied it
// (idembench run --workers). Every applied effect is one entry of a list per
// key; with fencing an effect whose token is lower than the highest applied
// for its key is rejected and leaves no entry. The fence and the list of a
// key share one hash tag and change in one script: the check and the append
// are one atomic step, and so are the recovery lookup's fence and look.
package redissink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// Options configure a Sink. The zero value is a plain sink under the prefix
// "idembench" whose entries expire after an hour.
type Options struct {
	// Prefix starts every Redis key of the sink; empty means "idembench".
	Prefix string
	// Fenced rejects an effect whose token is lower than the highest
	// applied for its key, and makes Recover raise that fence.
	Fenced bool
	// TTL is how long a key's entries and fence live; zero means an hour.
	TTL time.Duration
}

// Sink is the Redis ledger sink. It implements workload.LedgerReader and
// workload.Recoverer.
type Sink struct {
	client redis.UniversalClient
	opts   Options
}

var (
	_ workload.LedgerReader = (*Sink)(nil)
	_ workload.Recoverer    = (*Sink)(nil)
)

// New returns a sink on client. The client should not retry commands by
// itself (go-redis MaxRetries -1): an apply whose reply was lost and that
// the client sent again would be an effect applied twice.
func New(client redis.UniversalClient, opts Options) *Sink {
	if opts.Prefix == "" {
		opts.Prefix = "idembench"
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	return &Sink{client: client, opts: opts}
}

// entry is one applied effect as the list holds it.
type entry struct {
	Key    string `json:"k"`
	Exec   string `json:"e"`
	Token  uint64 `json:"t"`
	At     int64  `json:"at"` // history.Now() when applied
	Status int    `json:"s"`
	Body   []byte `json:"b"`
}

func (e entry) applied() workload.Applied {
	return workload.Applied{At: e.At, Effect: workload.Effect{Key: e.Key, Exec: e.Exec, Token: idem.Token(e.Token),
		Response: idem.Response{Status: e.Status, Body: e.Body}}}
}

// luaFence is the fence shared by both scripts: when ARGV[1] is '1' (a
// fenced sink) it sets rejected to true if the fence KEYS[1] holds a token
// above ARGV[2], and otherwise raises the fence to ARGV[2].
const luaFence = `
local rejected = false
if ARGV[1] == '1' then
  local last = redis.call('HGET', KEYS[1], 't')
  if last and tonumber(last) > tonumber(ARGV[2]) then
    rejected = true
  else
    redis.call('HSET', KEYS[1], 't', ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
end
`

// applyScript appends ARGV[4] to the list KEYS[2] unless the fence
// rejects it, and returns 1 when it appended.
var applyScript = redis.NewScript(luaFence + `
if rejected then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`)

// recoverScript raises the fence and returns the first entry of the list
// KEYS[2], or false.
var recoverScript = redis.NewScript(luaFence + `
return redis.call('LINDEX', KEYS[2], 0)
`)

func (s *Sink) keys(key string) []string {
	base := s.opts.Prefix + ":ledger:{" + key + "}"
	return []string{base + ":f", base + ":l"}
}

func (s *Sink) args(token idem.Token, more ...any) []any {
	fenced := "0"
	if s.opts.Fenced {
		fenced = "1"
	}
	return append([]any{fenced, strconv.FormatUint(uint64(token), 10), s.opts.TTL.Milliseconds()}, more...)
}

// Name returns workload.SinkFenced or workload.SinkPlain.
func (s *Sink) Name() string {
	if s.opts.Fenced {
		return workload.SinkFenced
	}
	return workload.SinkPlain
}

// Apply appends e to its key's entries, unless the sink is fenced and a
// higher token was applied for e.Key.
func (s *Sink) Apply(ctx context.Context, e workload.Effect) (bool, error) {
	ent, err := json.Marshal(entry{Key: e.Key, Exec: e.Exec, Token: uint64(e.Token), At: history.Now(), Status: e.Response.Status, Body: e.Response.Body})
	if err != nil {
		return false, err
	}
	n, err := applyScript.Run(ctx, s.client, s.keys(e.Key), s.args(e.Token, ent)...).Int64()
	if err != nil {
		return false, fmt.Errorf("redissink: apply: %w", err)
	}
	return n == 1, nil
}

// Recover raises key's fence to token (a fenced sink) and looks up the
// first applied effect of key, in one script ("fence, then look": a stale
// holder applying after the look is rejected).
func (s *Sink) Recover(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	v, err := recoverScript.Run(ctx, s.client, s.keys(key), s.args(token)...).Text()
	if errors.Is(err, redis.Nil) {
		return idem.Response{}, false, nil
	}
	if err != nil {
		return idem.Response{}, false, fmt.Errorf("redissink: recover: %w", err)
	}
	var e entry
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		return idem.Response{}, false, fmt.Errorf("redissink: recover: %w", err)
	}
	return idem.Response{Status: e.Status, Body: e.Body}, true, nil
}

// ReadLedger returns the applied effects of keys (Redis cannot select by
// prefix cheaply: the prefix is ignored), 500 keys per round trip.
func (s *Sink) ReadLedger(ctx context.Context, _ string, keys []string) ([]workload.Applied, error) {
	var out []workload.Applied
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 500)]
		keys = keys[len(batch):]
		pipe := s.client.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(batch))
		for i, k := range batch {
			cmds[i] = pipe.LRange(ctx, s.keys(k)[1], 0, -1)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redissink: read ledger: %w", err)
		}
		for _, c := range cmds {
			for _, v := range c.Val() {
				var e entry
				if err := json.Unmarshal([]byte(v), &e); err != nil {
					return nil, fmt.Errorf("redissink: read ledger: %w", err)
				}
				out = append(out, e.applied())
			}
		}
	}
	return out, nil
}
