package netfault

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// The guard is a custom toxiproxy toxic, one per direction, added before the
// proxy starts and never removed, so it sits right after toxiproxy's head
// noop stub on every connection. Toxiproxy's own latency toxic and noop stub
// send to the next stage with a plain blocking channel send; when a client
// closes its connection while replies are queued, the stage that writes to
// that client is gone, the send blocks forever, the goroutines leak, and
// removing a toxic hangs in toxiproxy's drain loop. The guard avoids this:
//
//   - it always receives from the head noop stub (queueing up to
//     guardQueueLen chunks in its per-connection state), so the head never
//     blocks on it;
//   - it sends only inside a select that also watches toxiproxy's interrupt,
//     the proxy's closing and a stall timer, so it never blocks toxiproxy;
//   - a send that cannot complete within guardStallTimeout means the
//     connection's reader is gone (or has stopped reading): the guard closes
//     its output, which closes the connection, and drops what it holds;
//   - when the proxy closes, every guard drops its data and closes at once.
//
// The downstream guard also implements the latency fault: each reply chunk
// is released at its arrival time plus the current delay, never before the
// previous chunk (the same rule as toxiproxy's latency toxic).
type guard struct {
	sh    *shared
	delay bool // apply the latency fault (downstream only)
}

const (
	guardType     = "netfault_guard"
	guardQueueLen = 1024 // chunks of up to 32 KiB, as toxiproxy's latency buffer
)

// guardStallTimeout is how long a guard waits for the next stage to take a
// due chunk before it gives the connection up. New copies it into the
// proxy's shared state; tests shorten it before New.
var guardStallTimeout = 5 * time.Second

func init() { toxics.Register(guardType, new(guard)) }

var (
	_ toxics.Toxic         = (*guard)(nil)
	_ toxics.StatefulToxic = (*guard)(nil)
)

// shared is the state every guard of one proxy reads: the latency fault and
// the proxy's closing signal. Guards re-read it when changed is closed.
type shared struct {
	stall time.Duration // guardStallTimeout at New; never changes

	mu      sync.Mutex
	latency time.Duration
	jitter  time.Duration
	rng     *rand.Rand
	changed chan struct{} // closed and replaced on every change
	closing chan struct{} // closed once, by Proxy.Close
}

func newShared(seed uint64) *shared {
	return &shared{
		stall:   guardStallTimeout,
		rng:     rand.New(rand.NewPCG(seed, 0x6e65746661756c74)),
		changed: make(chan struct{}),
		closing: make(chan struct{}),
	}
}

func (s *shared) setLatency(d, jitter time.Duration) {
	s.mu.Lock()
	s.latency, s.jitter = d, jitter
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *shared) close() {
	s.mu.Lock()
	close(s.closing)
	s.mu.Unlock()
}

// snapshot returns the channel that announces the next change, and the
// closing channel.
func (s *shared) snapshot() (changed, closing <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed, s.closing
}

// sampleDelay returns the current delay with its jitter drawn.
func (s *shared) sampleDelay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.latency
	if s.jitter > 0 {
		d += time.Duration(s.rng.Int64N(int64(2*s.jitter))) - s.jitter
	}
	return d
}

// guardState is one connection's guard state; it survives interrupts.
type guardState struct {
	queue   []*stream.StreamChunk
	due     time.Time // release time of queue[0]; zero until drawn
	lastDue time.Time // release time of the last chunk sent
	stalled time.Time // when the pending send of a due chunk started
	eof     bool      // input closed
	dropped bool      // output closed: drop everything until input closes
}

// NewState returns an empty per-connection state.
func (g *guard) NewState() any { return new(guardState) }

// Pipe forwards chunks as described on guard. It returns on an interrupt
// (toxiproxy runs it again with the same state) or once the input has
// closed and the output is closed.
func (g *guard) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*guardState)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		changed, closing := g.sh.snapshot()
		select {
		case <-closing:
			st.drop(stub)
		default:
		}
		if st.eof && (st.dropped || len(st.queue) == 0) {
			st.drop(stub)
			return
		}

		var (
			in     <-chan *stream.StreamChunk
			out    chan<- *stream.StreamChunk
			head   *stream.StreamChunk
			timerC <-chan time.Time
		)
		if !st.eof && (st.dropped || len(st.queue) < guardQueueLen) {
			in = stub.Input
		}
		if !st.dropped && len(st.queue) > 0 {
			now := time.Now()
			if st.due.IsZero() {
				st.due = st.queue[0].Timestamp
				if g.delay {
					st.due = st.due.Add(g.sh.sampleDelay())
				}
				if st.due.Before(st.lastDue) {
					st.due = st.lastDue
				}
			}
			wait := st.due.Sub(now)
			if wait <= 0 {
				out, head = stub.Output, st.queue[0]
				if st.stalled.IsZero() {
					st.stalled = now
				}
				wait = st.stalled.Add(g.sh.stall).Sub(now)
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC = timer.C
		}

		select {
		case <-stub.Interrupt:
			return
		case <-closing:
		case <-changed:
			st.due = time.Time{} // draw the head's delay again
		case c := <-in:
			switch {
			case c == nil:
				st.eof = true
			case !st.dropped:
				st.queue = append(st.queue, c)
			}
		case out <- head:
			st.queue[0] = nil
			st.queue = st.queue[1:]
			st.lastDue, st.due, st.stalled = st.due, time.Time{}, time.Time{}
		case <-timerC:
			if out != nil && time.Since(st.stalled) >= g.sh.stall {
				st.drop(stub) // the reader is gone or stuck: close the connection
			}
		}
	}
}

// drop closes the output once and forgets the queue.
func (st *guardState) drop(stub *toxics.ToxicStub) {
	if !st.dropped {
		st.dropped = true
		st.queue = nil
		stub.Close()
	}
}
