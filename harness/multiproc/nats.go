package multiproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idembench/idembench/harness"
)

// Join makes a run's workers processes started elsewhere (on other hosts,
// by a Kubernetes Indexed Job, SSH or systemd) that join it through NATS
// JetStream, instead of processes the coordinator starts: worker i runs
// `idembench worker --join URL --run RUN --index i`. The coordinator
// creates the run's stream (every frame of every worker connection, both
// ways, in order and deduplicated by writer and sequence), waits for each
// worker to join and speaks the same protocol with it as with a local
// one. What the transport cannot do: stop a remote process (SIGSTOP) or
// start it again, so the scenario's crashes and pauses are injected in
// each worker's engine instead (joinfaults.go), and a worker that dies is
// lost: an environment error naming its index.
type Join struct {
	// URL is the NATS server's URL, reachable from the coordinator and
	// every worker.
	URL string
	// Run names the run on the server: its subjects and stream.
	Run string
	// Wait bounds the wait for every worker to join; zero means a minute.
	Wait time.Duration
	// SpanKeys makes the workers share the run's keys, as local workers
	// do, so that a key's holder and its successor are on different
	// hosts; its real-time order is then judged across clocks, to within
	// their bounds. By default each worker draws keys of its own (a
	// prefix per worker), so a key's operations are timed by one clock.
	SpanKeys bool
}

// Subjects and stream of a joined run.
func joinSubject(run string) string       { return "idembench." + run + ".join" }
func streamName(run string) string        { return "IDEMBENCH_" + run }
func pipeSubject(run, end string) string  { return "idembench." + run + ".pipe." + end }
func aliveSubject(run, end string) string { return "idembench." + run + ".alive." + end }

// checkRunName refuses a run name NATS cannot carry in a subject or a
// stream name.
func checkRunName(run string) error {
	if run == "" || len(run) > 64 {
		return fmt.Errorf("run name %q: want 1 to 64 characters", run)
	}
	for _, r := range run {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("run name %q: only letters, digits, - and _", run)
		}
	}
	return nil
}

// maxChunk bounds one message of a pipe, below NATS's default 1 MiB
// payload limit.
const maxChunk = 256 << 10

// eofHeader marks the message that closes a pipe's direction.
const eofHeader = "Idembench-Eof"

// natsPipe is one end of a worker connection over JetStream: what it
// writes goes to subject out, what it reads comes, in order, from subject
// in, through an ordered consumer of the run's stream.
type natsPipe struct {
	js      jetstream.JetStream
	run     string
	in      string
	next    uint64 // the stream sequence to read from after a consumer reset
	out     string
	id      string // writer id, for deduplication
	seq     atomic.Int64
	msgs    jetstream.MessagesContext
	buf     []byte
	eof     atomic.Bool // the other end closed its direction
	once    sync.Once
	mu      sync.Mutex // guards msgs, which a reset replaces
	stopped atomic.Bool
}

// closedByPeer reports whether the other end closed its direction and
// this end read up to there.
func (p *natsPipe) closedByPeer() bool { return p.eof.Load() }

func newNATSPipe(ctx context.Context, js jetstream.JetStream, run, out, in string) (*natsPipe, error) {
	p := &natsPipe{js: js, run: run, in: in, out: out, id: out}
	if err := p.subscribe(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// subscribe (re)starts reading subject in from stream sequence next (the
// start when zero).
func (p *natsPipe) subscribe(ctx context.Context) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{p.in}}
	if p.next > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, p.next
	}
	c, err := p.js.OrderedConsumer(ctx, streamName(p.run), cfg)
	if err != nil {
		return err
	}
	msgs, err := c.Messages()
	if err != nil {
		return err
	}
	p.mu.Lock()
	old := p.msgs
	p.msgs = msgs
	p.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	return nil
}

// iter returns the current message iterator.
func (p *natsPipe) iter() jetstream.MessagesContext {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.msgs
}

// stop stops reading: Read returns io.EOF.
func (p *natsPipe) stop() {
	p.stopped.Store(true)
	p.iter().Stop()
}

// resubscribes bounds how often Read restarts its consumer in a row
// before it gives up (io.EOF), 100 ms apart.
const resubscribes = 50

func (p *natsPipe) publish(m *nats.Msg) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.js.PublishMsg(ctx, m, jetstream.WithMsgID(p.id+"-"+strconv.FormatInt(p.seq.Add(1), 10)))
	return err
}

func (p *natsPipe) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		c := b[:min(len(b), maxChunk)]
		if err := p.publish(&nats.Msg{Subject: p.out, Data: c}); err != nil {
			return n, err
		}
		n += len(c)
		b = b[len(c):]
	}
	return n, nil
}

func (p *natsPipe) Read(b []byte) (int, error) {
	for len(p.buf) == 0 {
		if p.eof.Load() {
			return 0, io.EOF
		}
		m, err := p.iter().Next()
		if err != nil {
			// Stopped (Close, a lost peer): the end. Anything else (a
			// consumer reset that failed on a busy server): read on from
			// the next sequence with a new consumer, for a while.
			if p.stopped.Load() {
				return 0, io.EOF
			}
			ok := false
			for range resubscribes {
				time.Sleep(100 * time.Millisecond)
				if p.stopped.Load() {
					return 0, io.EOF
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := p.subscribe(ctx)
				cancel()
				if ok = err == nil; ok {
					break
				}
			}
			if !ok {
				return 0, io.EOF
			}
			continue
		}
		if md, err := m.Metadata(); err == nil {
			p.next = md.Sequence.Stream + 1
		}
		if m.Headers().Get(eofHeader) != "" {
			p.eof.Store(true)
			continue
		}
		p.buf = m.Data()
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// Close ends the writing direction (the other end reads io.EOF) and stops
// reading.
func (p *natsPipe) Close() error {
	var err error
	p.once.Do(func() {
		m := nats.NewMsg(p.out)
		m.Header.Set(eofHeader, "1")
		err = p.publish(m)
		p.stop()
	})
	return err
}

// joiner is the coordinator's side of a joined run: its NATS connection,
// the run's stream, and the join requests not yet taken, by worker index.
type joiner struct {
	j      Join
	nc     *nats.Conn
	js     jetstream.JetStream
	sub    *nats.Subscription
	mu     sync.Mutex
	joined map[int]chan string // end names of joins, by index
	inc    atomic.Int64
}

func openJoiner(ctx context.Context, j Join, n int) (*joiner, error) {
	if err := checkRunName(j.Run); err != nil {
		return nil, harness.ConfigError("join: %w", err)
	}
	if j.Wait <= 0 {
		j.Wait = time.Minute
	}
	nc, err := nats.Connect(j.URL, nats.Name("idembench coordinator "+j.Run))
	if err != nil {
		return nil, harness.EnvironmentError(fmt.Errorf("join: connect to %s: %w", j.URL, err))
	}
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName(j.Run), Subjects: []string{"idembench." + j.Run + ".pipe.>"},
			Storage: jetstream.MemoryStorage, Duplicates: time.Minute})
	}
	if err != nil {
		nc.Close()
		return nil, harness.EnvironmentError(fmt.Errorf("join: create the run's stream on %s: %w", j.URL, err))
	}
	jr := &joiner{j: j, nc: nc, js: js, joined: map[int]chan string{}}
	for i := range n {
		jr.joined[i] = make(chan string, 1)
	}
	jr.sub, err = nc.Subscribe(joinSubject(j.Run), func(m *nats.Msg) {
		i, err := strconv.Atoi(string(m.Data))
		jr.mu.Lock()
		ch, ok := jr.joined[i]
		jr.mu.Unlock()
		if err != nil || !ok {
			_ = m.Respond([]byte("error: no worker index " + string(m.Data) + " in this run"))
			return
		}
		end := "w" + strconv.Itoa(i) + "-" + strconv.FormatInt(jr.inc.Add(1), 10)
		select {
		case ch <- end:
			_ = m.Respond([]byte(end))
		default:
			_ = m.Respond([]byte("error: worker " + strconv.Itoa(i) + " has joined already"))
		}
	})
	if err != nil {
		jr.close()
		return nil, harness.EnvironmentError(fmt.Errorf("join: %w", err))
	}
	return jr, nil
}

// accept waits for worker i to join and returns its connection as a Proc.
func (jr *joiner) accept(ctx context.Context, i int) (*Proc, error) {
	t := time.NewTimer(jr.j.Wait)
	defer t.Stop()
	var end string
	select {
	case end = <-jr.joined[i]:
	case <-t.C:
		return nil, fmt.Errorf("worker %d did not join run %s on %s within %s (start it with: idembench worker --join %s --run %s --index %d)",
			i, jr.j.Run, jr.j.URL, jr.j.Wait, jr.j.URL, jr.j.Run, i)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	pipe, err := newNATSPipe(ctx, jr.js, jr.j.Run, pipeSubject(jr.j.Run, end+".down"), pipeSubject(jr.j.Run, end+".up"))
	if err != nil {
		return nil, err
	}
	return remoteProc(jr.nc, aliveSubject(jr.j.Run, end), pipe), nil
}

func (jr *joiner) close() {
	if jr.sub != nil {
		_ = jr.sub.Unsubscribe()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = jr.js.DeleteStream(ctx, streamName(jr.j.Run))
	jr.nc.Close()
}

// JoinWorker is a worker process's side of a joined run: it joins run
// j.Run as worker index on j.URL and serves the worker of the kind the
// coordinator's hello names, as ServeWorker does over stdin and stdout.
func JoinWorker(ctx context.Context, j Join, index int, kinds map[string]WorkerFunc) error {
	if err := checkRunName(j.Run); err != nil {
		return harness.ConfigError("join: %w", err)
	}
	nc, err := nats.Connect(j.URL, nats.Name("idembench worker "+j.Run+" "+strconv.Itoa(index)))
	if err != nil {
		return harness.EnvironmentError(fmt.Errorf("join: connect to %s: %w", j.URL, err))
	}
	defer nc.Close()
	wait := j.Wait
	if wait <= 0 {
		wait = time.Minute
	}
	var reply *nats.Msg
	for deadline := time.Now().Add(wait); ; {
		reply, err = nc.RequestWithContext(ctx, joinSubject(j.Run), []byte(strconv.Itoa(index)))
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the coordinator is not up yet
	}
	if err != nil {
		return harness.EnvironmentError(fmt.Errorf("join run %s on %s: %w", j.Run, j.URL, err))
	}
	end := string(reply.Data)
	if len(end) > 6 && end[:6] == "error:" {
		return harness.ConfigError("join run %s: %s", j.Run, end[7:])
	}
	// Answer the coordinator's liveness pings while this process lives.
	alive, err := nc.Subscribe(aliveSubject(j.Run, end), func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		return harness.EnvironmentError(err)
	}
	defer alive.Unsubscribe()
	js, err := jetstream.New(nc)
	if err != nil {
		return harness.EnvironmentError(err)
	}
	pipe, err := newNATSPipe(ctx, js, j.Run, pipeSubject(j.Run, end+".up"), pipeSubject(j.Run, end+".down"))
	if err != nil {
		return harness.EnvironmentError(fmt.Errorf("join run %s: %w", j.Run, err))
	}
	return ServeWorker(ctx, pipe, kinds)
}

// errWorkerLost is the exit of a remote worker that stopped answering.
var errWorkerLost = errors.New("remote worker stopped answering (its process or host died)")
