package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idembench/idembench/idem"
)

// message is what the producer publishes: charge Amount to Account.
type message struct {
	ID      string `json:"id"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// Which messages misbehave, by position.
func flaky(i int) bool   { return i%7 == 6 }   // fails once, retryably
func invalid(i int) bool { return i%11 == 10 } // amount 0: fails permanently

// publish returns the messages, how often each is published, and, last,
// a message that reuses the first one's id with another payload.
func publish(cfg config) ([]message, []int) {
	r := rand.New(rand.NewPCG(cfg.seed, cfg.seed))
	var msgs []message
	var copies []int
	for i := range cfg.messages {
		m := message{ID: fmt.Sprintf("msg-%03d", i), Account: fmt.Sprintf("acct-%d", i%3), Amount: 1 + r.Int64N(100)}
		if invalid(i) {
			m.Amount = 0
		}
		msgs = append(msgs, m)
		copies = append(copies, 1+r.IntN(3))
	}
	if len(msgs) > 0 {
		impostor := msgs[0]
		impostor.Amount += 1000
		msgs = append(msgs, impostor)
		copies = append(copies, 1)
	}
	return msgs, copies
}

var errInvalidAmount = errors.New("invalid amount")

// ledger is the side effect: account balances. It is fenced like the
// harness's fenced sink: a charge carries its lease's token, and a charge
// with a token lower than one already seen for the message is refused, so
// a consumer that lost its lease cannot charge behind its successor.
type ledger struct {
	mu       sync.Mutex
	pos      map[string]int
	balance  map[string]int64
	applied  map[string]int        // charges per message id
	fence    map[string]idem.Token // highest token seen per message id
	attempts map[string]int
}

func newLedger(msgs []message) *ledger {
	l := &ledger{pos: map[string]int{}, balance: map[string]int64{}, applied: map[string]int{},
		fence: map[string]idem.Token{}, attempts: map[string]int{}}
	for i, m := range msgs {
		if _, ok := l.pos[m.ID]; !ok {
			l.pos[m.ID] = i
		}
	}
	return l
}

// charge is the business function a consumer runs under the message's key.
func (l *ledger) charge(ctx context.Context, m message) error {
	lease, _ := idem.LeaseFrom(ctx)
	time.Sleep(time.Millisecond) // long enough for duplicates to meet in flight
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts[m.ID]++
	if m.Amount <= 0 {
		return idem.Permanent(fmt.Errorf("%s: %w %d", m.ID, errInvalidAmount, m.Amount))
	}
	if flaky(l.pos[m.ID]) && l.attempts[m.ID] == 1 {
		return fmt.Errorf("%s: payment provider timed out", m.ID)
	}
	if lease.Token < l.fence[m.ID] {
		return idem.Permanent(fmt.Errorf("%s: stale charge (token %d)", m.ID, lease.Token))
	}
	l.fence[m.ID] = lease.Token
	l.balance[m.Account] += m.Amount
	l.applied[m.ID]++
	return nil
}

// recover is the engine's recovery hook: a consumer that takes over the
// lease of a dead one asks whether the dead one already charged. It raises
// the fence in the same critical section ("fence, then look").
func (l *ledger) recover(ctx context.Context, lease idem.Lease) (idem.Response, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fence[lease.Key] = max(l.fence[lease.Key], lease.Token)
	if l.applied[lease.Key] > 0 {
		return idem.Response{Status: 200}, true, nil
	}
	return idem.Response{}, false, nil
}

func (l *ledger) charges(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied[id]
}
