package blackbox

import "sync"

// keyShards is the number of locks of a keyTable: enough that the clients
// of a run seldom wait for each other.
const keyShards = 64

// keyTable holds the resource ids of a run's successes, for the response
// oracle. It is sharded by key so that clients do not contend on one lock.
type keyTable struct {
	shards [keyShards]keyShard
}

type keyShard struct {
	mu  sync.Mutex
	ids []resourceAnswer
	_   [64]byte // keep shards on their own cache lines
}

func newKeyTable() *keyTable { return &keyTable{} }

// shard returns the shard of key (FNV-1a).
func (t *keyTable) shard(key string) *keyShard {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return &t.shards[h%keyShards]
}

// addID records a success and the resource id it named.
func (t *keyTable) addID(a resourceAnswer) {
	s := t.shard(a.key)
	s.mu.Lock()
	s.ids = append(s.ids, a)
	s.mu.Unlock()
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
