package consume

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/idembench/idembench/workload"
)

// message is one distinct message of a run: its key (the message id) and
// its payload.
type message struct {
	Key    string `json:"key"`
	N      int    `json:"n"`
	Amount int64  `json:"amount"`
	Poison bool   `json:"poison,omitempty"`
}

func (m *message) body() []byte {
	b, _ := json.Marshal(m)
	return b
}

// plan is what the seed decides about the messages: their keys and
// payloads, and which of them the faults strike. The workload driver
// publishes them (see publisher): the order, the duplicates and the
// publish retries are its traffic, as for every other command.
type plan struct {
	msgs  []message // message number N is msgs[N]; its key is number N+1
	crash *targets
	pause *targets
	hold  *targets // Faults.Overlap
	// copy holds the pause and overlap targets: the fault needs a second
	// copy of each, which the publisher sends right after the first.
	copy   *targets
	poison map[string]bool
	index  map[string]int
}

// newPlan draws a run's plan. Keys are the driver's keys of a one-client
// run with prefix run (workload.KeyOf), so that runs sharing a store never
// share a key.
func newPlan(cfg *Config, run string) *plan {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x636f6e73756d65))
	p := &plan{poison: map[string]bool{}, index: map[string]int{}}
	for i := range cfg.Messages {
		key := workload.KeyOf(run, publishers, int64(i+1))
		p.msgs = append(p.msgs, message{Key: key, N: i, Amount: 1 + rng.Int64N(1000)})
		p.index[key] = i
	}
	// Distinct messages for poison, crash and pause targets.
	perm := rng.Perm(cfg.Messages)
	take := func(n int) []string {
		var keys []string
		for _, i := range perm[:n] {
			keys = append(keys, p.msgs[i].Key)
		}
		perm = perm[n:]
		return keys
	}
	for _, k := range take(cfg.Poison) {
		p.poison[k] = true
	}
	for i := range p.msgs {
		p.msgs[i].Poison = p.poison[p.msgs[i].Key]
	}
	p.crash = newTargets(take(cfg.Faults.CrashBeforeAck))
	pause, hold := take(cfg.Faults.Pause), take(cfg.Faults.Overlap)
	p.pause, p.hold = newTargets(pause), newTargets(hold)
	p.copy = newTargets(append(pause, hold...))
	return p
}

// targets is a set of keys a fault strikes once each.
type targets struct {
	mu   sync.Mutex
	keys map[string]bool // true: not struck yet
}

func newTargets(keys []string) *targets {
	t := &targets{keys: map[string]bool{}}
	for _, k := range keys {
		t.keys[k] = true
	}
	return t
}

// take reports whether key is a target not struck yet, and marks it
// struck.
func (t *targets) take(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys[key] {
		t.keys[key] = false
		return true
	}
	return false
}

// list returns the targets, struck or not, sorted.
func (t *targets) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.keys))
}

// has reports whether key is a target, struck or not.
func (t *targets) has(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.keys[key]
	return ok
}

// struck counts the targets struck so far.
func (t *targets) struck() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, left := range t.keys {
		if !left {
			n++
		}
	}
	return n
}

// byKey returns the message with key, or nil.
func (p *plan) byKey(key string) *message {
	if i, ok := p.index[key]; ok {
		return &p.msgs[i]
	}
	return nil
}
