package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

func TestClassify(t *testing.T) {
	ok := idem.Response{Status: 200, Body: []byte("ok k 1.1")}
	cases := []struct {
		name  string
		res   idem.Result
		err   error
		want  history.Outcome
		token uint64
		resp  bool
	}{
		{"executed", idem.Result{Response: ok, Token: 5}, nil, history.Executed, 5, true},
		{"recovered", idem.Result{Response: ok, Token: 6, Recovered: true}, nil, history.Executed, 6, true},
		{"replayed", idem.Result{Response: ok, Token: 5, Replayed: true}, nil, history.Replayed, 0, true},
		{"failed replay", idem.Result{Response: ok, Token: 5, Replayed: true, Failed: true}, nil, history.Failed, 0, true},
		{"failed first", idem.Result{Response: ok, Token: 5, Failed: true}, idem.Permanent(ErrPermanent), history.Failed, 5, true},
		{"crash", idem.Result{Token: 5}, fmt.Errorf("%w at after-fn: boom", idem.ErrAborted), history.Unknown, 0, false},
		{"lease lost on fail", idem.Result{Token: 5, Failed: true}, errors.Join(idem.Permanent(ErrStale), fmt.Errorf("idem: fail: %w", idem.ErrLeaseLost)), history.LeaseLost, 5, false},
		{"in progress", idem.Result{}, fmt.Errorf("%w: key", idem.ErrInProgress), history.InProgress, 0, false},
		{"mismatch", idem.Result{}, fmt.Errorf("%w: key", idem.ErrFingerprintMismatch), history.Mismatch, 0, false},
		{"released", idem.Result{Token: 7}, &retryableError{ErrRetryable}, history.Released, 7, false},
		{"release failed", idem.Result{Token: 7}, errors.Join(&retryableError{ErrRetryable}, idem.BackendError("release", errors.New("down"))), history.Unknown, 0, false},
		{"backend", idem.Result{}, idem.BackendError("acquire", errors.New("down")), history.Unknown, 0, false},
		{"ambiguous", idem.Result{}, idem.MarkAmbiguous(errors.New("timeout")), history.Unknown, 0, false},
		{"deadline", idem.Result{}, context.DeadlineExceeded, history.Unknown, 0, false},
		{"invalid key", idem.Result{}, fmt.Errorf("%w: empty", idem.ErrInvalidKey), history.Error, 0, false},
		{"anything else", idem.Result{}, errors.New("weird"), history.Unknown, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := history.Op{Kind: history.KindCall, Call: 1, Return: 2}
			classify(&op, c.res, c.err, &execution{})
			if op.Outcome != c.want || op.Token != c.token || (op.Resp != "") != c.resp {
				t.Fatalf("got outcome %s token %d resp %q; want %s %d resp=%t", op.Outcome, op.Token, op.Resp, c.want, c.token, c.resp)
			}
			if c.want == history.Unknown && op.Return != history.NoReturn {
				t.Fatal("unknown call has a return time")
			}
			if c.resp && op.Exec != "1.1" {
				t.Fatalf("exec %q, want the one the response names", op.Exec)
			}
			if err := op.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSourceKeysAndCopies(t *testing.T) {
	k, err := Keys{Concurrent: 2, Delayed: 1, Delay: time.Hour}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var box mailbox
	s := newSource(&k, 1, 3, 4, &box)
	d1, _ := s.next()
	if d1.key != "k-c3-1" || d1.seq != 4 {
		t.Fatalf("key %q number %d, want k-c3-1 number 4 (client 3 of 4)", d1.key, d1.seq)
	}
	// The two concurrent copies are due now and come next; the delayed one
	// waits.
	for range 2 {
		c, _ := s.next()
		if c.key != d1.key || c.req != d1.req {
			t.Fatalf("copy %+v of %+v", c, d1)
		}
	}
	if due, ok := box.nextDue(); !ok || time.Until(due) < 59*time.Minute {
		t.Fatal("delayed copy not scheduled an hour out")
	}
	d2, _ := s.next()
	if d2.key == d1.key || d2.req == d1.req {
		t.Fatal("fresh request reused the key")
	}
	if d2.seq != 8 {
		t.Fatalf("second key's number %d, want 8: the four clients' keys interleave", d2.seq)
	}
	for _, d := range []delivery{d1, d2} {
		if got := KeyOf(k.Prefix, 4, d.seq); got != d.key {
			t.Fatalf("KeyOf(%q, 4, %d) = %q, want %q", k.Prefix, d.seq, got, d.key)
		}
	}
	if p := newSource(&k, 1, 4, 4, &mailbox{}); p.fresh().seq != 1 || p.fresh().seq != 2 {
		t.Fatal("the open loop's pacer numbers its keys 1, 2, …")
	}

	z, _ := Keys{Dist: "zipf", Space: 10}.withDefaults()
	a, b := newSource(&z, 9, 0, 1, &mailbox{}), newSource(&z, 9, 0, 1, &mailbox{})
	seen := map[string]int{}
	for range 1000 {
		x, _ := a.next()
		y, _ := b.next()
		if x.key != y.key {
			t.Fatal("same seed, different keys")
		}
		if want := "k-z" + strconv.FormatInt(x.seq-1, 10); x.key != want {
			t.Fatalf("zipf key %q has number %d", x.key, x.seq)
		}
		seen[x.key]++
	}
	if len(seen) > 10 || seen["k-z0"] < seen["k-z9"] {
		t.Fatalf("zipf keys %v", seen)
	}
}

func TestConfigCheck(t *testing.T) {
	base := Config{Duration: time.Second}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"no duration", func(c *Config) { c.Duration = 0 }, "duration"},
		{"negative clients", func(c *Config) { c.Clients = -1 }, "clients"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"zipf space", func(c *Config) { c.Keys.Dist = "zipf" }, "space"},
		{"zipf s", func(c *Config) { c.Keys = Keys{Dist: "zipf", Space: 3, ZipfS: 0.5} }, "exponent"},
		{"delay", func(c *Config) { c.Keys.Delayed = 1 }, "delay"},
		{"bad prefix", func(c *Config) { c.Keys.Prefix = "a b" }, "prefix"},
		{"jitter", func(c *Config) { c.Retry.Jitter = 2 }, "jitter"},
		{"rates", func(c *Config) { c.Business.RetryableRate = 0.7; c.Business.PermanentRate = 0.7 }, "rates"},
		{"latency", func(c *Config) { c.Business.Latency = Latency{Dist: "uniform", Min: 2, Max: 1} }, "uniform"},
		{"latency dist", func(c *Config) { c.Business.Latency.Dist = "pareto" }, "pareto"},
		{"heartbeat", func(c *Config) { c.Engine = EngineSettings{LeaseTTL: time.Second, Heartbeat: 2 * time.Second} }, "heartbeat"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.mod(&cfg)
			got, err := Check(cfg)
			if c.want == "" {
				if err != nil || got.Clients != DefaultClients || got.Retry.MaxAttempts != 1 || got.Engine.LeaseTTL != idem.DefaultLeaseTTL {
					t.Fatalf("%v %+v", err, got)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrConfig naming %q", err, c.want)
			}
		})
	}
}
