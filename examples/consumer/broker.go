package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/idem"
)

// delivery is one delivery of a message. The same message may be delivered
// many times: published more than once, or handed back by a worker.
type delivery struct {
	msg message
}

// broker is an at-least-once queue on a channel. Every published copy stays
// outstanding until a worker acks or rejects it; nacked copies go back at
// once, requeued copies after a delay. Done closes when nothing is
// outstanding.
type broker struct {
	deliveries   chan delivery
	done         chan struct{}
	requeueDelay time.Duration
	outstanding  atomic.Int64

	mu         sync.Mutex
	decisions  map[idem.Decision]int
	deadLetter []message
}

// newBroker returns a broker for msgs, each published copies[i] times. The
// channel holds every copy, so handing one back never blocks.
func newBroker(msgs []message, copies []int, requeueDelay time.Duration) *broker {
	total := 0
	for _, c := range copies {
		total += c
	}
	b := &broker{
		deliveries:   make(chan delivery, total),
		done:         make(chan struct{}),
		requeueDelay: requeueDelay,
		decisions:    make(map[idem.Decision]int),
	}
	b.outstanding.Store(int64(total))
	for i, m := range msgs {
		for range copies[i] {
			b.deliveries <- delivery{msg: m}
		}
	}
	if total == 0 {
		close(b.done)
	}
	return b
}

// settle applies a worker's decision to delivery d.
func (b *broker) settle(d delivery, dec idem.Decision) {
	b.mu.Lock()
	b.decisions[dec]++
	if dec == idem.Reject {
		b.deadLetter = append(b.deadLetter, d.msg)
	}
	b.mu.Unlock()

	switch dec {
	case idem.Nack:
		b.deliveries <- d
	case idem.Requeue:
		time.AfterFunc(b.requeueDelay, func() { b.deliveries <- d })
	default: // Ack, Reject
		if b.outstanding.Add(-1) == 0 {
			close(b.done)
		}
	}
}
