package sim

import (
	"sync"

	"github.com/idembench/idembench/idem"
)

// sink is the business side effect's destination (a payment provider): it
// applies an effect unless a higher token already applied or fenced the
// key, and answers the engine's recovery question. Calls reach it in
// scheduler order.
type sink struct {
	mu   sync.Mutex
	keys map[string]*sinkKey
}

type sinkKey struct {
	fence   idem.Token // highest token applied or fenced
	applied bool
	resp    idem.Response
}

func newSink() *sink { return &sink{keys: make(map[string]*sinkKey)} }

func (s *sink) key(k string) *sinkKey {
	sk := s.keys[k]
	if sk == nil {
		sk = &sinkKey{}
		s.keys[k] = sk
	}
	return sk
}

// apply applies the effect of the lease with token tok, or rejects it as
// stale when a higher token came first.
func (s *sink) apply(key string, tok idem.Token, resp idem.Response) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sk := s.key(key)
	if tok < sk.fence {
		return false
	}
	sk.fence = tok
	sk.applied = true
	sk.resp = resp
	return true
}

// recoverKey fences the key at tok and says whether an effect was applied
// (and with what response): fence, then look, in one step.
func (s *sink) recoverKey(key string, tok idem.Token) (idem.Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sk := s.key(key)
	if tok > sk.fence {
		sk.fence = tok
	}
	return sk.resp, sk.applied
}
