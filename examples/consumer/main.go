// Command consumer charges payments from a real message broker, RabbitMQ
// or NATS JetStream, through idem.Engine.Consume and the broker adapters
// idem/idemamqp and idem/idemnats. The publisher sends every message one to
// three times (publisher retries), some messages fail retryably once, some
// can never succeed (poison), one message id is reused for a different
// payload, and one consumer dies after a charge and before its ack, so the
// broker redelivers that message to another consumer. Every valid message
// is charged exactly once; poison and reused messages end in the
// dead-letter queue (stream) once each.
//
//	go run ./examples/consumer --broker rabbitmq --url amqp://guest:guest@127.0.0.1:5672/
//	go run ./examples/consumer --broker nats --url nats://127.0.0.1:4222
//
// The queue (stream) and its dead-letter queue (stream) are created for the
// run and deleted at its end, Ctrl-C included.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.broker, "broker", "rabbitmq", "rabbitmq or nats")
	fs.StringVar(&cfg.url, "url", "", "broker URL (default amqp://guest:guest@127.0.0.1:5672/ or nats://127.0.0.1:4222)")
	fs.IntVar(&cfg.messages, "messages", 20, "distinct messages to publish")
	fs.IntVar(&cfg.workers, "workers", 4, "concurrent consumers")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed for duplicates and amounts")
	fs.BoolVar(&cfg.crash, "crash", true, "kill one consumer after a charge, before its ack")
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
	broker   string
	url      string
	messages int
	workers  int
	seed     uint64
	crash    bool
}

// leaseTTL is short so that the redelivery of the crashed consumer's
// message takes its lease over quickly.
const leaseTTL = time.Second

// errCrash is the crash fault: the consumer dies after the charge.
var errCrash = errors.New("consumer killed after the charge, before the ack")

// run publishes, consumes until every copy is settled, and reports.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.workers < 1 {
		return nil, fmt.Errorf("--workers %d: need at least 1", cfg.workers)
	}
	msgs, copies := publish(cfg)
	l := newLedger(msgs)
	store := memstore.New(memstore.Options{})
	defer store.Close()
	// The crash: the first execution of the second message returns an
	// error at PointAfterFn, after the charge and before the outcome is
	// stored; the consumer then drops the delivery without acking it.
	var crashed atomic.Bool
	crashed.Store(!cfg.crash || len(msgs) < 2)
	hook := func(ctx context.Context, p idem.Point, lease idem.Lease) error {
		if p == idem.PointAfterFn && lease.Key == msgs[1].ID && crashed.CompareAndSwap(false, true) {
			return errCrash
		}
		return nil
	}
	eng := idem.New(store, idem.WithLeaseTTL(leaseTTL), idem.WithHook(hook), idem.WithRecovery(l.recover))
	defer eng.Close()
	rep := &report{cfg: cfg, messages: msgs, ledger: l}
	for _, c := range copies {
		rep.published += c
	}
	var err error
	switch cfg.broker {
	case "rabbitmq":
		err = runRabbitMQ(ctx, cfg, eng, l, msgs, copies, rep)
	case "nats":
		err = runNATS(ctx, cfg, eng, l, msgs, copies, rep)
	default:
		err = fmt.Errorf("--broker %q: want rabbitmq or nats", cfg.broker)
	}
	return rep, err
}

// report is the outcome of one run.
type report struct {
	cfg          config
	messages     []message
	published    int
	actions      map[string]int // settled copies by idem.Decision name
	redelivered  int
	crashes      int
	deadLettered int
	ledger       *ledger
}

func (r *report) count(action string, redelivered bool) {
	if r.actions == nil {
		r.actions = map[string]int{}
	}
	r.actions[action]++
	if redelivered {
		r.redelivered++
	}
}

// settled counts the acked and dead-lettered copies.
func (r *report) settled() int { return r.actions["ack"] + r.actions["dead-letter"] }

// print writes the report.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "%s, seed %d: %d messages published as %d copies, %d consumers\n",
		r.cfg.broker, r.cfg.seed, len(r.messages), r.published, r.cfg.workers)
	var acts []string
	for _, a := range slices.Sorted(maps.Keys(r.actions)) {
		acts = append(acts, fmt.Sprintf("%s %d", a, r.actions[a]))
	}
	fmt.Fprintf(w, "settled: %s; %d deliveries were redeliveries\n", strings.Join(acts, ", "), r.redelivered)
	counts := map[int]int{}
	for _, m := range r.messages[:r.cfg.messages] {
		counts[r.ledger.charges(m.ID)]++
	}
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w, "charged %d time(s): %d messages\n", n, counts[n])
	}
	fmt.Fprintf(w, "consumers killed after a charge, before the ack: %d\n", r.crashes)
	fmt.Fprintf(w, "dead-letter queue: %d messages (poison and reused ids)\n", r.deadLettered)
}
