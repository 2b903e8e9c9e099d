// Command consumer shows idem.Engine.Consume in a channel-fed consumer: an
// at-least-once broker delivers every message one to three times to
// concurrent workers, some messages fail retryably once, some can never
// succeed, and one message id is reused for a different payload. Every
// valid message is charged exactly once.
//
//	go run ./examples/consumer --messages 20 --workers 4 --seed 1
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	var cfg config
	fs.IntVar(&cfg.messages, "messages", 20, "distinct messages to publish")
	fs.IntVar(&cfg.workers, "workers", 4, "concurrent workers")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed for duplicates and amounts")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	rep, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
	rep.print(os.Stdout)
}

type config struct {
	messages int
	workers  int
	seed     uint64
}

// message is what the producer publishes: charge Amount to Account.
type message struct {
	ID      string `json:"id"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

func (m message) fingerprint() idem.Fingerprint {
	b, _ := json.Marshal(m)
	return idem.NewFingerprint(b)
}

// Which messages misbehave, by position.
func flaky(i int) bool   { return i%7 == 6 }   // fails once, retryably
func invalid(i int) bool { return i%11 == 10 } // amount 0: fails permanently

// publish returns the messages, how often each is published, and the
// message that reuses the first one's id with another payload.
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

// ledger is the side effect: account balances, and how often each message
// was applied.
type ledger struct {
	mu       sync.Mutex
	balance  map[string]int64
	applied  map[string]int
	attempts map[string]int
}

var errInvalidAmount = errors.New("invalid amount")

// charge is the business function a worker runs under the message's key.
func (l *ledger) charge(_ context.Context, m message, pos map[string]int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts[m.ID]++
	i := pos[m.ID]
	if m.Amount <= 0 {
		return idem.Permanent(fmt.Errorf("%s: %w %d", m.ID, errInvalidAmount, m.Amount))
	}
	if flaky(i) && l.attempts[m.ID] == 1 {
		return fmt.Errorf("%s: payment provider timed out", m.ID)
	}
	time.Sleep(time.Millisecond) // long enough for duplicates to meet in flight
	l.balance[m.Account] += m.Amount
	l.applied[m.ID]++
	return nil
}

// report is the outcome of one run.
type report struct {
	seed        uint64
	workers     int
	messages    []message
	published   int
	decisions   map[idem.Decision]int
	applied     map[string]int
	balance     map[string]int64
	failed      []string // permanently failed message ids
	deadLetters []message
}

// run publishes, consumes with cfg.workers workers until every delivery is
// settled, and reports.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.workers < 1 {
		return nil, fmt.Errorf("--workers %d: need at least 1", cfg.workers)
	}
	store := memstore.New(memstore.Options{})
	defer store.Close()
	eng := idem.New(store)

	msgs, copies := publish(cfg)
	pos := make(map[string]int)
	for i, m := range msgs[:cfg.messages] {
		pos[m.ID] = i
	}
	b := newBroker(msgs, copies, 2*time.Millisecond)
	l := &ledger{balance: map[string]int64{}, applied: map[string]int{}, attempts: map[string]int{}}
	var failedMu sync.Mutex
	failed := map[string]bool{}

	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			for {
				var d delivery
				select {
				case <-ctx.Done():
					return
				case <-b.done:
					return
				case d = <-b.deliveries:
				}
				dec, err := eng.Consume(ctx, d.msg.ID, d.msg.fingerprint(), func(ctx context.Context) error {
					return l.charge(ctx, d.msg, pos)
				})
				if dec == idem.Ack && errors.Is(err, errInvalidAmount) {
					failedMu.Lock()
					failed[d.msg.ID] = true
					failedMu.Unlock()
				}
				b.settle(d, dec)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	rep := &report{seed: cfg.seed, workers: cfg.workers, messages: msgs, decisions: b.decisions,
		applied: l.applied, balance: l.balance, deadLetters: b.deadLetter}
	for _, c := range copies {
		rep.published += c
	}
	for id := range failed {
		rep.failed = append(rep.failed, id)
	}
	sort.Strings(rep.failed)
	return rep, nil
}

// print writes the report.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "seed %d: %d messages published as %d deliveries, %d workers\n", r.seed, len(r.messages), r.published, r.workers)
	fmt.Fprintf(w, "decisions: ack %d, nack %d, requeue %d, reject %d\n",
		r.decisions[idem.Ack], r.decisions[idem.Nack], r.decisions[idem.Requeue], r.decisions[idem.Reject])
	counts := map[int]int{}
	for _, n := range r.applied {
		counts[n]++
	}
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w, "charged %d time(s): %d messages\n", n, counts[n])
	}
	failed := strings.Join(r.failed, " ")
	if failed == "" {
		failed = "none"
	}
	fmt.Fprintf(w, "failed permanently (acked, stored): %s\n", failed)
	for _, m := range r.deadLetters {
		fmt.Fprintf(w, "dead-lettered: %s (id reused with amount %d)\n", m.ID, m.Amount)
	}
}
