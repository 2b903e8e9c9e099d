package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"testing/synctest"
)

// step is one goroutine parked at the scheduler, waiting for its turn. Its
// name is what the seed orders it by: the actor, its sequence number and
// the action, never the moment it arrived, so the choice does not depend
// on how the Go scheduler ran the goroutines that woke at one instant.
type step struct {
	actor int
	seq   int64
	what  string
	go_   chan struct{}
}

// scheduler serializes every action that touches shared state (a store
// call, an effect, a resumption after a sleep): at one virtual instant
// the goroutines that woke park here, and once the bubble is quiet
// (synctest.Wait) the seed picks which one runs next. Only that one runs
// until it blocks again, so the history is a function of the seed.
type scheduler struct {
	rng     *rand.Rand
	mu      sync.Mutex
	parked  []*step
	arrival chan struct{} // a step parked while the scheduler slept
	done    chan struct{}
	steps   int64 // steps released, for the figures
}

func newScheduler(seed uint64) *scheduler {
	return &scheduler{
		rng:     rand.New(rand.NewPCG(seed, 0x5ced)),
		arrival: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

// park blocks the calling goroutine until the scheduler gives it the turn.
// actor and seq name the caller uniquely among the goroutines that can be
// parked at once.
func (s *scheduler) park(actor int, seq int64, what string) {
	st := &step{actor: actor, seq: seq, what: what, go_: make(chan struct{})}
	s.mu.Lock()
	s.parked = append(s.parked, st)
	s.mu.Unlock()
	select {
	case s.arrival <- struct{}{}:
	default:
	}
	<-st.go_
}

// run is the scheduler's loop; it returns when stop is called.
func (s *scheduler) run() {
	for {
		synctest.Wait() // every goroutine of the bubble is parked or asleep
		s.mu.Lock()
		ready := s.parked
		s.parked = nil
		s.mu.Unlock()
		if len(ready) == 0 {
			select {
			case <-s.arrival:
				continue
			case <-s.done:
				return
			}
		}
		slices.SortFunc(ready, func(a, b *step) int {
			if c := cmp.Compare(a.actor, b.actor); c != 0 {
				return c
			}
			if c := cmp.Compare(a.seq, b.seq); c != 0 {
				return c
			}
			return cmp.Compare(a.what, b.what)
		})
		// Release one, chosen by the seed; put the others back. Each
		// released step runs alone until it blocks (synctest.Wait at the
		// top of the loop).
		i := s.rng.IntN(len(ready))
		pick := ready[i]
		ready = slices.Delete(ready, i, i+1)
		s.mu.Lock()
		s.parked = append(ready, s.parked...)
		s.mu.Unlock()
		s.steps++
		close(pick.go_)
	}
}

func (s *scheduler) stop() { close(s.done) }
