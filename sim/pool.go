package sim

import "sync"

// pool runs the calls of the simulation on goroutines it keeps: a call
// goroutine goes deep (engine, store, fmt) and a fresh one grows its stack
// several times, which cost about a tenth of the CPU of a production day.
// A call is handed to an idle goroutine when one waits, else to a new one;
// which goroutine runs a call does not matter to the history, since every
// step of the call waits for its turn at the scheduler by the actor's name.
type pool struct {
	work    chan func()
	running sync.WaitGroup // calls not yet returned
	workers sync.WaitGroup // goroutines of the pool
}

func newPool() *pool { return &pool{work: make(chan func())} }

// Go runs f on a goroutine of the pool.
func (p *pool) Go(f func()) {
	p.running.Add(1)
	select {
	case p.work <- f:
	default:
		p.workers.Go(func() {
			for ; f != nil; f = <-p.work {
				f()
				p.running.Done()
			}
		})
	}
}

// Wait waits until every call given to Go returned.
func (p *pool) Wait() { p.running.Wait() }

// close ends the pool's goroutines once they are idle; Go must not be
// called after it.
func (p *pool) close() {
	close(p.work)
	p.workers.Wait()
}
