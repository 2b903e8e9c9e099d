package history

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
)

// chunkSize is the number of ops per storage chunk: buffers grow by whole
// chunks and never copy recorded ops, so recording cost stays flat at any
// history size.
const chunkSize = 1024

// chunks is an append-only list of fixed-size slices of ops.
type chunks struct {
	full  [][]Op
	cur   []Op
	kinds [8]int // ops per Kind (kinds above 7 are not counted)
}

func (c *chunks) add(op *Op) {
	if int(op.Kind) < len(c.kinds) {
		c.kinds[op.Kind]++
	}
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]Op, 0, chunkSize)
	}
	c.cur = append(c.cur, *op)
}

func (c *chunks) len() int { return len(c.full)*chunkSize + len(c.cur) }

func (c *chunks) appendTo(dst []Op) []Op {
	for _, ch := range c.full {
		dst = append(dst, ch...)
	}
	return append(dst, c.cur...)
}

// shard is one lock-protected buffer of a Recorder, padded so that shards
// used by different cores do not share a cache line.
type shard struct {
	mu  sync.Mutex
	ops chunks
	_   [64]byte
}

// Recorder collects the Ops of a run from many goroutines. Record is safe
// for concurrent use and takes only the lock of one shard chosen by the op's
// Client, so clients on different cores do not contend; a goroutine that
// records a lot can take its own lock-free Buffer instead. The zero Recorder
// is not usable: call NewRecorder.
type Recorder struct {
	shards []shard
	mask   int

	mu      sync.Mutex
	buffers []*Buffer
}

// NewRecorder returns an empty Recorder with a number of shards suited to
// GOMAXPROCS.
func NewRecorder() *Recorder {
	n := 1
	for n < 4*runtime.GOMAXPROCS(0) {
		n <<= 1
	}
	return &Recorder{shards: make([]shard, n), mask: n - 1}
}

// Record stores a copy of op. It is safe for concurrent use. Ops from one
// Client go to one shard, so one client's ops stay in recording order.
func (r *Recorder) Record(op Op) {
	s := &r.shards[op.Client&r.mask]
	s.mu.Lock()
	s.ops.add(&op)
	s.mu.Unlock()
}

// Buffer is a Recorder's buffer owned by one goroutine: Record on it takes no
// lock. It must not be used from two goroutines at once, and must not be
// used after Recorder.Ops or Recorder.History has been called.
type Buffer struct {
	ops chunks
}

// Buffer returns a new Buffer whose ops are included in r's result. It is
// safe for concurrent use.
func (r *Recorder) Buffer() *Buffer {
	b := new(Buffer)
	r.mu.Lock()
	r.buffers = append(r.buffers, b)
	r.mu.Unlock()
	return b
}

// Record stores a copy of op in b.
func (b *Buffer) Record(op Op) { b.ops.add(&op) }

// Len returns the number of ops recorded so far. It is safe for concurrent
// use with Record on the Recorder but counts Buffers only when their owners
// are not recording.
func (r *Recorder) Len() int {
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += s.ops.len()
		s.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.buffers {
		n += b.ops.len()
	}
	return n
}

// LenKind returns the number of ops of kind k recorded so far, with the
// same concurrency rules as Len. Progress counters use it to count calls
// and effects apart from lease ops.
func (r *Recorder) LenKind(k Kind) int {
	if int(k) >= len(chunks{}.kinds) {
		return 0
	}
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += s.ops.kinds[k]
		s.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.buffers {
		n += b.ops.kinds[k]
	}
	return n
}

// Ops returns every recorded op sorted by Call (ties keep recording order
// within a shard or Buffer). Call it once recording has stopped: ops recorded
// concurrently with it may or may not be included, and Buffers must be idle.
func (r *Recorder) Ops() []Op {
	out := make([]Op, 0, r.Len())
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		out = s.ops.appendTo(out)
		s.mu.Unlock()
	}
	r.mu.Lock()
	for _, b := range r.buffers {
		out = b.ops.appendTo(out)
	}
	r.mu.Unlock()
	SortByCall(out)
	return out
}

// History returns a History with header h and the ops from Ops. Format,
// Version and Clock are filled in when empty.
func (r *Recorder) History(h Header) *History {
	if h.Format == "" {
		h.Format = Format
	}
	if h.Version == 0 {
		h.Version = FormatVersion
	}
	if h.Clock == "" {
		h.Clock = ClockName
	}
	return &History{Header: h, Ops: r.Ops()}
}

// SortByCall sorts ops by Call, keeping the relative order of ops with
// equal Call. It sorts compact (Call, index) pairs and then permutes the ops
// in place, so it moves each op at most once and needs 16 bytes of scratch
// per op rather than a second copy of the history.
func SortByCall(ops []Op) {
	if slices.IsSortedFunc(ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) }) {
		return
	}
	type pair struct {
		call int64
		idx  int
	}
	order := make([]pair, len(ops))
	for i := range ops {
		order[i] = pair{ops[i].Call, i}
	}
	slices.SortFunc(order, func(a, b pair) int {
		if c := cmp.Compare(a.call, b.call); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	// Position i must receive ops[order[i].idx]. Follow each cycle of the
	// permutation once, marking filled positions with idx = -1.
	for i := range order {
		if order[i].idx < 0 || order[i].idx == i {
			continue
		}
		tmp := ops[i]
		j := i
		for {
			src := order[j].idx
			order[j].idx = -1
			if src == i {
				ops[j] = tmp
				break
			}
			ops[j] = ops[src]
			j = src
		}
	}
}
