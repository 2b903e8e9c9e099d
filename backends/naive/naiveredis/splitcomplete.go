// Package naiveredis holds deliberately broken Redis-backed idempotency
// stores, like package naive's in-memory designs: each is the production
// Redis store (backends/redisstore) with one transition rewritten the way a
// store author might write it by hand, in several round trips. They exist
// so that the simulation (sim/simredis) can show that a race inside one
// store call is reachable: every round trip is a scheduling point there.
// Never use them to guard real side effects.
//
//	design          type           flaw                                            caught by
//	split-complete  SplitComplete  Complete reads the record's token in one round   simulation on miniredis
//	                               trip and writes by key alone in a second: a      (sim/simredis), I8,
//	                               take-over between the two is overwritten         with a stalled round trip
//	split-takeover  SplitTakeover  a take-over reads the expired lease in one       simulation on miniredis,
//	                               round trip and writes the new one by key alone   I7/I8, by the order of
//	                               in a second: racers all take the key over        round trips alone
package naiveredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// SplitComplete is redisstore.Store except for Complete, which checks the
// fencing token and then writes in two round trips: HMGET status and token,
// compare them in Go, then HSET the completed record and PEXPIRE it to the
// retention, by key alone. A holder whose lease expires between the two
// (a pause, a network stall: anything that delays its second round trip)
// overwrites the record of the execution that took the key over: its
// response wins although a higher token was granted (I8), and a successor
// that completed first is completed again (I4). Every other transition,
// the fenced Fail, Release and MarkUncertain included, is the production
// script: one atomic round trip.
type SplitComplete struct {
	split
}

// split is what a split design keeps beside the production store it
// wraps: the client and key prefix of its own round trips, and the ids
// (idBase and a sequence) its own writes record.
type split struct {
	*redisstore.Store
	client redis.UniversalClient
	prefix string
	idBase string
	seq    atomic.Uint64
}

// init makes s the production store on client with opts.
func (s *split) init(client redis.UniversalClient, opts redisstore.Options) error {
	st, err := redisstore.New(client, opts)
	if err != nil {
		return err
	}
	s.Store, s.client, s.prefix = st, client, opts.Prefix
	if s.prefix == "" {
		s.prefix = redisstore.DefaultPrefix
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s.idBase = "split." + hex.EncodeToString(b[:]) + "."
	return nil
}

// nextID returns a fresh id for one of the design's own writes.
func (s *split) nextID() string { return s.idBase + strconv.FormatUint(s.seq.Add(1), 36) }

// NewSplitComplete returns a SplitComplete store on client; opts are the
// production store's.
func NewSplitComplete(client redis.UniversalClient, opts redisstore.Options) (*SplitComplete, error) {
	s := &SplitComplete{}
	if err := s.init(client, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// recordKey is the production store's name of key's record hash:
// prefix:{key}, with '%', '{' and '}' escaped as it escapes them.
func recordKey(prefix, key string) string {
	return prefix + ":{" + tagEscaper.Replace(key) + "}"
}

var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// Complete checks, then writes: two round trips. That is the flaw.
func (s *SplitComplete) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	if l == nil {
		return errors.New("naiveredis: complete: nil lease")
	}
	if retention <= 0 {
		return fmt.Errorf("naiveredis: complete: retention %v is not positive", retention)
	}
	rec := recordKey(s.prefix, l.Key)
	f, err := s.client.HMGet(ctx, rec, "status", "token").Result()
	if err != nil {
		return idem.BackendError("complete", err)
	}
	st, _ := f[0].(string)
	tok, _ := f[1].(string)
	if st != "in_progress" || tok != strconv.FormatUint(uint64(l.Token), 10) {
		return fmt.Errorf("naiveredis: complete %q token %d: %w", l.Key, l.Token, idem.ErrLeaseLost)
	}
	// Second round trip: the write, by key alone.
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, rec, "status", "completed", "response", string(idem.EncodeResponse(&resp)),
			"done_id", s.nextID())
		p.PExpire(ctx, rec, retention)
		return nil
	})
	if err != nil {
		return idem.MarkAmbiguous(idem.BackendError("complete", err))
	}
	return nil
}
