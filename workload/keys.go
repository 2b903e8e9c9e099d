package workload

import (
	"container/heap"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/idem"
)

// delivery is one delivery of a logical request: the original or a copy.
type delivery struct {
	req      int64 // logical request id, shared by copies
	key      string
	seq      int64     // the key's number in the run, from 1
	mismatch bool      // sent with another request body than the key's first
	due      time.Time // when a copy becomes deliverable
	intended int64     // open loop: intended send time on the timeline
}

// fingerprint returns the fingerprint and its short id of a delivery of
// key. Every delivery of a key uses the same request body, except
// mismatching ones.
func fingerprint(key string, mismatch bool) (idem.Fingerprint, string) {
	body := "req"
	if mismatch {
		body = "other"
	}
	fp := idem.FingerprintString(key, body)
	return fp, hex.EncodeToString(fp[:8])
}

// source generates the deliveries of one client (or of the open-loop
// pacer) from its own random stream. Copies go to the shared mailbox, from
// which any client takes them.
type source struct {
	keys   *Keys
	rng    *rand.Rand
	zipf   *rand.Zipf
	id     int64 // client id; request ids are id<<32 | n
	n      int64
	box    *mailbox
	last   string // last key generated, reused by unique-key mismatches
	lastSq int64  // its number
	keybuf []byte
	// The n-th unique key of the source is key number (n-1)*stride +
	// offset + 1: the clients of a closed loop interleave, the pacer of an
	// open loop counts alone.
	stride, offset int64
	// bounded marks a count-bounded run (Config.Requests), where the
	// source sends left more logical requests.
	bounded bool
	left    int64
}

// newSource returns the source of client id, one of clients; id ==
// clients is the open loop's pacer.
func newSource(k *Keys, seed int64, id, clients int, box *mailbox) *source {
	s := &source{
		keys:   k,
		rng:    rand.New(rand.NewPCG(uint64(seed), uint64(id)+1)),
		id:     int64(id),
		box:    box,
		stride: int64(clients),
		offset: int64(id),
	}
	if id >= clients {
		s.stride, s.offset = 1, 0
	}
	if k.Dist == "zipf" {
		s.zipf = rand.NewZipf(s.rng, k.ZipfS, 1, uint64(k.Space-1))
	}
	return s
}

// next returns the next delivery: a due copy from the mailbox when there is
// one, else a fresh logical request (whose copies it posts). ok is false
// when there is no due copy and a count-bounded source has sent its share.
func (s *source) next() (d delivery, ok bool) {
	if d, ok := s.box.take(time.Time{}); ok {
		return d, true
	}
	if s.bounded {
		if s.left <= 0 {
			return delivery{}, false
		}
		s.left--
	}
	return s.fresh(), true
}

// waitCopy waits until the earliest copy in the mailbox is due, for a
// count-bounded source that has sent its share. It returns false when
// the mailbox is empty (the source's part of the traffic is over) or ctx
// ends.
func (s *source) waitCopy(ctx context.Context) bool {
	due, ok := s.box.nextDue()
	if !ok {
		return false
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	return waitUntil(ctx, t, due)
}

// fresh returns a new logical request and posts its copies.
func (s *source) fresh() delivery {
	s.n++
	d := delivery{req: s.id<<32 | s.n}
	if s.zipf != nil {
		rank := int64(s.zipf.Uint64())
		d.key, d.seq = s.makeKey('z', rank), rank+1
	} else {
		d.key, d.seq = s.makeKey('c', s.n), (s.n-1)*s.stride+s.offset+1
	}
	if s.keys.MismatchRate > 0 && s.rng.Float64() < s.keys.MismatchRate {
		if s.zipf == nil && s.last != "" {
			d.key, d.seq = s.last, s.lastSq
		}
		d.mismatch = true
		s.last, s.lastSq = d.key, d.seq
		return d // a mismatching delivery gets no copies
	}
	s.last, s.lastSq = d.key, d.seq
	if k := s.keys; k.Concurrent+k.Delayed > 0 && (k.DupFraction >= 1 || s.rng.Float64() < k.DupFraction) {
		now := time.Now()
		for range k.Concurrent {
			c := d
			c.due = now
			s.box.post(c)
		}
		for i := 1; i <= k.Delayed; i++ {
			c := d
			c.due = now.Add(time.Duration(i) * k.Delay)
			s.box.post(c)
		}
	}
	return d
}

// KeyOf returns the unique key of number seq in a closed-loop run of
// clients clients whose keys start with prefix: the key the driver sends
// as that number (a run with Keys.Dist "unique" and Config.Requests
// numbers its keys 1 to Requests). Callers that aim something at a key
// before the run (a fault at a message, say) name it with KeyOf.
func KeyOf(prefix string, clients int, seq int64) string {
	id, n := (seq-1)%int64(clients), (seq-1)/int64(clients)+1
	s := source{keys: &Keys{Prefix: prefix}, id: id}
	return s.makeKey('c', n)
}

// makeKey returns "<prefix>-c<client>-<n>" for unique keys and
// "<prefix>-z<rank>" for Zipf keys.
func (s *source) makeKey(kind byte, n int64) string {
	b := append(s.keybuf[:0], s.keys.Prefix...)
	b = append(b, '-', kind)
	if kind == 'c' {
		b = strconv.AppendInt(b, s.id, 10)
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, n, 10)
	s.keybuf = b
	return string(b)
}

// mailbox holds copies of requests until they are due. Its empty check is
// one atomic load, so runs without copies pay nothing for it.
type mailbox struct {
	n  atomic.Int64
	mu sync.Mutex
	h  dueHeap
}

func (m *mailbox) post(d delivery) {
	m.mu.Lock()
	heap.Push(&m.h, d)
	m.n.Store(int64(len(m.h)))
	m.mu.Unlock()
}

// take removes and returns the earliest copy due at now (the zero now
// means the current time).
func (m *mailbox) take(now time.Time) (delivery, bool) {
	if m.n.Load() == 0 {
		return delivery{}, false
	}
	if now.IsZero() {
		now = time.Now()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.h) == 0 || m.h[0].due.After(now) {
		return delivery{}, false
	}
	d := heap.Pop(&m.h).(delivery)
	m.n.Store(int64(len(m.h)))
	return d, true
}

// nextDue returns when the earliest copy is due; ok is false when empty.
func (m *mailbox) nextDue() (time.Time, bool) {
	if m.n.Load() == 0 {
		return time.Time{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.h) == 0 {
		return time.Time{}, false
	}
	return m.h[0].due, true
}

type dueHeap []delivery

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(delivery)) }
func (h *dueHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
