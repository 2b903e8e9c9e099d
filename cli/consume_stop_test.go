package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
)

// TestConsumeInterrupt: SIGINT or SIGTERM ends a consume run whose
// handlers work 30 s each within 2 s, with exit 130 and run's one line
// saying what was written; the history so far is saved and the run's
// queues or streams are gone.
func TestConsumeInterrupt(t *testing.T) {
	bin := buildCLI(t)
	work := t.TempDir()
	urls := map[string]string{"rabbitmq": testenv.AMQPURL(t), "nats": testenv.NATSURL(t)}
	cases := []struct {
		name, broker string
		sig          syscall.Signal
		args         []string
		saved        bool
		wait         time.Duration // for the handlers to be at work
	}{
		{"rabbitmq SIGINT", "rabbitmq", syscall.SIGINT, nil, true, 1500 * time.Millisecond},
		{"nats SIGTERM", "nats", syscall.SIGTERM, nil, true, 1500 * time.Millisecond},
		{"rabbitmq worker processes", "rabbitmq", syscall.SIGINT, []string{"--processes", "--consumers", "2"}, true, 3 * time.Second},
		{"rabbitmq no-save", "rabbitmq", syscall.SIGINT, []string{"--no-save"}, false, 1500 * time.Millisecond},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(work, string(rune('a'+i)))
			args := append([]string{"consume", "--broker", c.broker, "--url", urls[c.broker], "--latency", "30s",
				"--messages", "20", "--timeout", "10m", "--seed", "9"}, c.args...)
			if c.saved {
				args = append(args, "--out", out)
			}
			code, stderr, took := signalCLI(t, exec.Command(bin, args...), c.wait, c.sig)
			if took > 2*time.Second {
				t.Errorf("exited %s after %v, want within 2 s", took, c.sig)
			}
			if code != exitInterrupted {
				t.Errorf("exit %d, want %d\n%s", code, exitInterrupted, stderr)
			}
			// The one line run prints, naming what the directory holds.
			dir := ""
			if c.saved {
				dir = out
			}
			if want := "idembench: " + interrupted(dir).Error() + "\n"; stderr != want {
				t.Errorf("stderr %q, want the one line %q", stderr, want)
			}
			if !c.saved {
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("--no-save wrote %s", out)
				}
				return
			}
			if !strings.Contains(stderr, "wrote the history so far to "+out) {
				t.Errorf("stderr does not say the history so far was written to %s", out)
			}
			b, err := os.ReadFile(filepath.Join(out, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			if h, err := history.Decode(bytes.NewReader(b)); err != nil || len(h.Ops) == 0 {
				t.Errorf("history so far: %d ops, %v; want some", opsOf(h), err)
			}
			var st struct {
				Resources []string `json:"resources"`
			}
			if b, err = os.ReadFile(filepath.Join(out, consume.StatsFile)); err == nil {
				err = json.Unmarshal(b, &st)
			}
			if err != nil {
				t.Fatal(err)
			}
			if left := testenv.LeftOnBroker(t, c.broker, urls[c.broker], st.Resources); len(left) > 0 {
				t.Errorf("left on the broker: %v", left)
			}
		})
	}
}

// TestConsumeStopsAtTimeout: a run whose handlers work 30 s each ends
// about --timeout after its start, not after its handlers: exit 4 (not
// drained).
func TestConsumeStopsAtTimeout(t *testing.T) {
	start := time.Now()
	r := runCLI(t, "consume", "--url", testenv.AMQPURL(t), "--latency", "30s", "--messages", "20", "--timeout", "1s", "--no-save")
	if r.code != exitThreshold || !strings.Contains(r.stdout, "not settled before the timeout") {
		t.Errorf("exit %d, want %d (not drained)\n%s%s", r.code, exitThreshold, r.stdout, r.err)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("a run with --timeout 1s took %s", took)
	}
}

// TestConsumeViolationOutranksNotDrained: a run that both finds double
// execution and does not drain within --timeout (the broker alone, slow
// handlers) exits 1 like run, not 4: the missed drain is still said.
func TestConsumeViolationOutranksNotDrained(t *testing.T) {
	r := runCLI(t, "consume", "--url", testenv.AMQPURL(t), "--broker-only", "--messages", "200", "--seed", "7",
		"--latency", "100ms", "--timeout", "2s", "--no-save")
	if !strings.Contains(r.stdout, "not settled before the timeout") {
		t.Skipf("the run drained within 2 s on this machine; nothing to rank\n%s", r.stdout)
	}
	if r.code != exitViolation || !strings.Contains(r.stdout, "verdict: violation") {
		t.Errorf("exit %d, want %d (the violation outranks not drained)\n%s%s", r.code, exitViolation, r.stdout, r.err)
	}
}

// TestConsumeBrokerDies: a RabbitMQ connection that dies in the middle of
// a run (a proxy in front of the broker is killed) is an environment error
// (exit 5) naming the connection, never a verdict.
func TestConsumeBrokerDies(t *testing.T) {
	direct := testenv.AMQPURL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	kill := tcpProxy(t, u.Host, func(addr string) { u.Host = addr })
	time.AfterFunc(time.Second, kill)
	start := time.Now()
	r := runCLI(t, "consume", "--url", u.String(), "--messages", "500", "--latency", "20ms", "--crash-before-ack", "0", "--seed", "8", "--no-save")
	if r.code != exitEnvironment || !strings.Contains(r.err, "RabbitMQ") || !strings.Contains(r.err, "connection died") {
		t.Errorf("exit %d, want %d naming the connection\n%s%s", r.code, exitEnvironment, r.stdout, r.err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s to notice the broker died", took)
	}
	// The run could not delete its queues: the test does, through the
	// broker itself.
	deleteLeftQueues(t, direct, r.err)
}

// tcpProxy forwards a listener on a free loopback port to target, tells
// at its address, and returns a function that cuts every connection and
// refuses new ones (idempotent; also run at the end of t).
func tcpProxy(t *testing.T, target string, at func(addr string)) (kill func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		dead  bool
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			mu.Lock()
			if err != nil || dead {
				mu.Unlock()
				c.Close()
				if b != nil {
					b.Close()
				}
				continue
			}
			conns = append(conns, c, b)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(b, c); b.Close() })
			wg.Go(func() { _, _ = io.Copy(c, b); c.Close() })
		}
	})
	kill = sync.OnceFunc(func() {
		ln.Close()
		mu.Lock()
		dead = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	t.Cleanup(kill)
	at(ln.Addr().String())
	return kill
}

// deleteLeftQueues deletes the RabbitMQ queues an error message says were
// left on the broker.
func deleteLeftQueues(t *testing.T, url, msg string) {
	t.Helper()
	names := regexp.MustCompile(`idembench\.consume\.[0-9a-z]+(\.dlq)?`).FindAllString(msg, -1)
	if len(names) == 0 {
		t.Errorf("the error does not say what was left on the broker: %s", msg)
		return
	}
	testenv.RemoveFromBroker(t, testenv.RabbitMQ, url, names)
}
