package consume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemnats"
)

// KeyHeader is the header that carries a message's key on NATS. It is not
// Nats-Msg-Id, on purpose: JetStream would drop the publisher's duplicate
// within its duplicate window, and the run is about the duplicates that
// reach consumers (publisher retries outside the window, redeliveries).
const KeyHeader = "Idem-Key"

// natsBroker is a run's work stream (with one durable pull consumer) and
// dead-letter stream on NATS JetStream.
type natsBroker struct {
	cfg               *Config
	owner             bool
	srv               *natsServer // nil unless the run has its own server
	nc                *nats.Conn
	js                jetstream.JetStream
	stream, dlqStream string
	subject, dlqSubj  string
	closed            bool

	mu         sync.Mutex
	down       time.Time // when the connection went down; zero while up
	downErr    error     // why, if the client said
	restarting bool      // a planned server restart is under way
}

const natsDurable = "work"

// natsLostAfter is how long the NATS connection may stay down (the client
// reconnects on its own) before the run counts the broker as dead; a
// planned server restart does not count.
const natsLostAfter = 5 * time.Second

// newNATS opens the run's streams: as their owner (the coordinator) it
// starts the private server if the run has one, creates the streams and
// can delete them; otherwise (a worker process, with cfg.URL naming the
// server) it only consumes.
func newNATS(ctx context.Context, cfg *Config, run string, owner bool) (*natsBroker, error) {
	id := strings.ToUpper(strings.ReplaceAll(run, "-", "_"))
	b := &natsBroker{cfg: cfg, owner: owner, stream: "IDEMBENCH_CONSUME_" + id, dlqStream: "IDEMBENCH_CONSUME_" + id + "_DLQ",
		subject: "idembench.consume." + run + ".work", dlqSubj: "idembench.consume." + run + ".dlq"}
	url := cfg.URL
	if owner && cfg.Faults.ServerRestart {
		srv, err := startNATSServer(ctx)
		if err != nil {
			return nil, brokerErr(ctx, err)
		}
		b.srv, url = srv, srv.url()
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Name("idembench consume"),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { b.disconnected(err) }),
		nats.ReconnectHandler(func(*nats.Conn) { b.reconnected() }))
	if err != nil {
		_ = b.close(ctx)
		return nil, brokerErr(ctx, err)
	}
	b.nc = nc
	if b.js, err = jetstream.New(nc); err == nil && owner {
		err = b.setup(ctx)
	}
	if err != nil {
		_ = b.close(ctx)
		return nil, brokerErr(ctx, err)
	}
	return b, nil
}

func (b *natsBroker) setup(ctx context.Context) error {
	storage := jetstream.MemoryStorage
	if b.srv != nil {
		storage = jetstream.FileStorage // it must survive the restart
	}
	for _, sc := range []jetstream.StreamConfig{
		{Name: b.stream, Subjects: []string{b.subject}, Storage: storage},
		{Name: b.dlqStream, Subjects: []string{b.dlqSubj}, Storage: storage},
	} {
		if _, err := b.js.CreateStream(ctx, sc); err != nil {
			return fmt.Errorf("create stream %s: %w", sc.Name, err)
		}
	}
	_, err := b.js.CreateConsumer(ctx, b.stream, jetstream.ConsumerConfig{
		Durable: natsDurable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: b.cfg.AckWait,
		MaxAckPending: b.cfg.Consumers * b.cfg.Prefetch * 4,
	})
	return err
}

// disconnected notes that the connection went down.
func (b *natsBroker) disconnected(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down.IsZero() {
		b.down = time.Now()
	}
	b.downErr = err
}

// reconnected notes that the connection is up again.
func (b *natsBroker) reconnected() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down, b.downErr = time.Time{}, nil
}

func (b *natsBroker) lost() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.restarting || b.down.IsZero() || time.Since(b.down) < natsLostAfter {
		return nil
	}
	why := "disconnected"
	if b.downErr != nil {
		why = b.downErr.Error()
	}
	return fmt.Errorf("the NATS connection has been down for more than %s (%s)", natsLostAfter, why)
}

func (b *natsBroker) url() string {
	if b.srv != nil {
		return b.srv.url()
	}
	return b.cfg.URL
}

func (b *natsBroker) resources() []string { return []string{b.stream, b.dlqStream} }

func (b *natsBroker) publish(ctx context.Context, key string, body []byte) error {
	m := nats.NewMsg(b.subject)
	m.Data = body
	m.Header.Set(KeyHeader, key)
	_, err := b.js.PublishMsg(ctx, m)
	return err
}

func (b *natsBroker) drained(ctx context.Context) (bool, error) {
	c, err := b.js.Consumer(ctx, b.stream, natsDurable)
	if err != nil {
		return false, err
	}
	ci, err := c.Info(ctx)
	if err != nil {
		return false, err
	}
	return ci.NumPending == 0 && ci.NumAckPending == 0, nil
}

func (b *natsBroker) deadLettered(ctx context.Context) (int, error) {
	s, err := b.js.Stream(ctx, b.dlqStream)
	if err != nil {
		return 0, err
	}
	return int(s.CachedInfo().State.Msgs), nil
}

func (b *natsBroker) restartServer(ctx context.Context) error {
	if b.srv == nil {
		return fmt.Errorf("%w: no private NATS server", ErrConfig)
	}
	b.mu.Lock()
	b.restarting = true
	b.mu.Unlock()
	err := b.srv.restart(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.restarting = false
	if !b.down.IsZero() {
		b.down = time.Now() // the client reconnects from now on
	}
	return err
}

func (b *natsBroker) close(ctx context.Context) error {
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	if b.js != nil && b.owner {
		for _, s := range []string{b.stream, b.dlqStream} {
			if err := b.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				errs = append(errs, fmt.Errorf("delete stream %s: %w", s, err))
			}
		}
	}
	if b.nc != nil {
		b.nc.Close()
	}
	if b.srv != nil {
		errs = append(errs, b.srv.stop())
	}
	return errors.Join(errs...)
}

func (b *natsBroker) subscribe(ctx context.Context, engine *idem.Engine, fn handler) (subscription, error) {
	c, err := b.js.Consumer(ctx, b.stream, natsDurable)
	if err != nil {
		return nil, err
	}
	s := &natsSub{cons: c}
	if b.cfg.Batch <= 1 {
		// Message by message: a pull iterator that keeps Prefetch
		// messages on their way. A batch run fetches instead.
		if s.it, err = c.Messages(jetstream.PullMaxMessages(b.cfg.Prefetch)); err != nil {
			return nil, err
		}
	}
	if engine != nil {
		s.c = idemnats.New(engine, func(ctx context.Context, m jetstream.Msg) error { return fn(ctx, m.Data()) },
			idemnats.Options{Key: idemnats.HeaderKey(KeyHeader), RequeueDelay: b.cfg.RequeueDelay,
				ConfirmAck: true, DeadLetter: idemnats.PublishTo(b.js, b.dlqSubj)})
	} else {
		s.fn, s.js, s.dlq = fn, b.js, b.dlqSubj
	}
	return s, nil
}

type natsSub struct {
	it     jetstream.MessagesContext // nil in a batch run
	cons   jetstream.Consumer
	closed atomic.Bool
	c      *idemnats.Consumer // nil: broker-only
	fn     handler
	js     jetstream.JetStream
	dlq    string
}

type nextResult struct {
	m   jetstream.Msg
	err error
}

func (s *natsSub) next(ctx context.Context) (delivery, error) {
	ch := make(chan nextResult, 1)
	go func() { m, err := s.it.Next(); ch <- nextResult{m, err} }()
	select {
	case r := <-ch:
		if errors.Is(r.err, jetstream.ErrMsgIteratorClosed) {
			return nil, errSubClosed
		}
		if r.err != nil {
			return nil, r.err
		}
		return &natsDelivery{s: s, m: r.m}, nil
	case <-ctx.Done():
		s.it.Stop() // Next returns; the goroutine exits
		return nil, ctx.Err()
	}
}

func (s *natsSub) close() {
	s.closed.Store(true)
	if s.it != nil {
		s.it.Stop()
	}
}

// nextBatch pulls with one Fetch(n) that waits at most linger: the server
// sends up to n messages and the request ends when it has sent n or
// linger passes. A fetch that fails (a server restarting) returns its
// error; an empty one returns no deliveries and no error.
func (s *natsSub) nextBatch(ctx context.Context, n int, linger time.Duration) ([]delivery, error) {
	if s.closed.Load() {
		return nil, errSubClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mb, err := s.cons.Fetch(n, jetstream.FetchMaxWait(linger))
	if err != nil {
		return nil, err
	}
	var out []delivery
	for m := range mb.Messages() {
		out = append(out, &natsDelivery{s: s, m: m})
	}
	if err := mb.Error(); err != nil && len(out) == 0 && !errors.Is(err, nats.ErrTimeout) {
		return nil, err
	}
	return out, nil
}

func (s *natsSub) processBatch(ctx context.Context, ds []delivery) []idem.Consumed {
	batch := make([]jetstream.Msg, len(ds))
	for i, d := range ds {
		batch[i] = d.(*natsDelivery).m
	}
	return s.c.ProcessBatch(ctx, batch)
}

type natsDelivery struct {
	s *natsSub
	m jetstream.Msg
}

func (d *natsDelivery) key() string  { return d.m.Headers().Get(KeyHeader) }
func (d *natsDelivery) body() []byte { return d.m.Data() }

func (d *natsDelivery) redelivered() bool { return d.attempt() > 1 }

func (d *natsDelivery) attempt() int {
	md, err := d.m.Metadata()
	if err != nil {
		return 1
	}
	return int(md.NumDelivered)
}

func (d *natsDelivery) process(ctx context.Context) (idem.Decision, error) {
	if d.s.c == nil {
		err := d.s.fn(ctx, d.m.Data())
		return directDecision(err), err
	}
	return d.s.c.Process(ctx, d.m)
}

func (d *natsDelivery) settle(ctx context.Context, a idem.Decision, cause error) error {
	if d.s.c == nil {
		// Broker-only: the same calls the adapter makes.
		switch a {
		case idem.Ack:
			return d.m.DoubleAck(ctx)
		case idem.DeadLetter:
			err := idemnats.PublishTo(d.s.js, d.s.dlq)(ctx, d.m, "", cause)
			return errors.Join(err, d.m.Term())
		}
		return d.m.Nak()
	}
	return d.s.c.Settle(ctx, d.m, a, cause)
}
