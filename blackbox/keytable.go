package blackbox

import (
	"maps"
	"sync"
)

// keyShards is the number of locks of a keyTable: enough that the clients
// of a run seldom wait for each other.
const keyShards = 64

// keyTable is what the driver learns per key while it runs: the keys the
// liveness probe must call, and the resource ids for the response oracle.
// It is sharded by key so that clients do not contend on one lock.
type keyTable struct {
	shards [keyShards]keyShard
}

type keyShard struct {
	mu   sync.Mutex
	open map[string]keyState
	ids  []resourceAnswer
	_    [64]byte // keep shards on their own cache lines
}

func newKeyTable() *keyTable {
	t := &keyTable{}
	for i := range t.shards {
		t.shards[i].open = map[string]keyState{}
	}
	return t
}

// shard returns the shard of key (FNV-1a).
func (t *keyTable) shard(key string) *keyShard {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return &t.shards[h%keyShards]
}

// markOpen records that a delivery of key ended without a final answer or
// saw an unknown outcome, so the liveness probe must call it.
func (t *keyTable) markOpen(key string, st keyState) {
	s := t.shard(key)
	s.mu.Lock()
	s.open[key] = st
	s.mu.Unlock()
}

// addID records a success and the resource id it named.
func (t *keyTable) addID(a resourceAnswer) {
	s := t.shard(a.key)
	s.mu.Lock()
	s.ids = append(s.ids, a)
	s.mu.Unlock()
}

// openKeys returns the keys marked open. Call it once the clients have
// stopped.
func (t *keyTable) openKeys() map[string]keyState {
	out := map[string]keyState{}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		maps.Copy(out, s.open)
		s.mu.Unlock()
	}
	return out
}

// ids returns every success with its resource id.
func (t *keyTable) ids() []resourceAnswer {
	var out []resourceAnswer
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		out = append(out, s.ids...)
		s.mu.Unlock()
	}
	return out
}
