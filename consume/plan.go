package consume

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
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

// plan is what the seed decides: the messages, the publish order (with
// duplicates) and which messages the faults strike.
type plan struct {
	msgs   []message
	order  []int // indexes into msgs, in publish order; duplicates appear twice
	crash  *targets
	pause  *targets
	hold   *targets // Faults.Overlap
	poison map[string]bool
	index  map[string]int
}

// newPlan draws a run's plan. Keys are prefixed with run, so that runs
// sharing a store never share a key.
func newPlan(cfg *Config, run string) *plan {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x636f6e73756d65))
	p := &plan{poison: map[string]bool{}, index: map[string]int{}}
	for i := range cfg.Messages {
		p.msgs = append(p.msgs, message{Key: fmt.Sprintf("%s-m%d", run, i), N: i, Amount: 1 + rng.Int64N(1000)})
		p.index[p.msgs[i].Key] = i
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
	p.pause = newTargets(take(cfg.Faults.Pause))
	p.hold = newTargets(take(cfg.Faults.Overlap))
	// Publish order: every message once, and a duplicate of some of them
	// 0 to 8 positions later (0: back to back, so copies can reach two
	// consumers at once); every pause target has one 0 to 2 later, every
	// overlap target one 0 or 1 later.
	later := map[int][]int{}
	for i := range p.msgs {
		p.order = append(p.order, i)
		switch {
		case p.pause.keys[p.msgs[i].Key]:
			// A paused consumer holds its message; the duplicate is what
			// reaches another consumer on a broker with no ack timeout.
			at := i + rng.IntN(3)
			later[at] = append(later[at], i)
		case p.hold.keys[p.msgs[i].Key]:
			// The copy the held first copy waits for.
			at := i + rng.IntN(2)
			later[at] = append(later[at], i)
		case rng.Float64() < cfg.DuplicateRate:
			at := i + rng.IntN(9)
			later[at] = append(later[at], i)
		}
		p.order = append(p.order, later[i]...)
		delete(later, i)
	}
	for i := len(p.msgs); len(later) > 0; i++ {
		p.order = append(p.order, later[i]...)
		delete(later, i)
	}
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
