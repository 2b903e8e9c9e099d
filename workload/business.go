package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Business errors. Callers test them with errors.Is.
var (
	// ErrRetryable is the business function's injected retryable failure.
	ErrRetryable = errors.New("workload: business function failed (retryable)")
	// ErrPermanent is its injected permanent failure.
	ErrPermanent = errors.New("workload: business function failed (permanent)")
	// ErrAmbiguous is its injected ambiguous outcome (marked
	// idem.MarkAmbiguous): the effect was applied, the function cannot
	// tell.
	ErrAmbiguous = errors.New("workload: business function cannot tell whether its effect happened")
	// ErrStale is returned (as a permanent error) when the sink rejected
	// the effect because a newer lease already applied one.
	ErrStale = errors.New("workload: effect rejected by fencing (stale token)")
)

// errRunEnded is the business function's error when the run's context
// ended while it worked: it gives up before its effect.
var errRunEnded = fmt.Errorf("workload: run ended during the business function's work: %w", context.Canceled)

// work stands for the business function's work: it waits d, or less when
// the run's context ends first (it reports false then). The execution's
// own context is not watched: a function does not notice that its lease
// was lost, which is what fencing must catch.
func (d *driver) work(dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.runDone:
		return false
	}
}

// retryableError marks a business error the engine should release on.
type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// Retryable marks err as a retryable failure of a business function: the
// engine releases the key on it (it is neither idem.Permanent nor
// idem.MarkAmbiguous), and ClassifyCall records the call as released. Its
// text is err's.
func Retryable(err error) error { return &retryableError{err} }

func isRetryable(err error) bool {
	var r *retryableError
	return errors.As(err, &r)
}

type failKind uint8

const (
	failNone failKind = iota
	failRetryable
	failPermanent
	failAmbiguous
)

// execution is what one call's business function will do, drawn by the
// client before the call (so the draws stay on the client's seeded stream
// even when the call outlives the client's interest in it).
type execution struct {
	client  int
	req     int64
	attempt int
	key     string
	seq     int64
	latency time.Duration
	fail    failKind
	probe   bool

	// Set by the function when it runs; read by the client only after Do
	// returned.
	ran bool
	id  string
}

// newExecution draws what attempt a's business function will do from a's
// random stream.
func (d *driver) newExecution(a *Attempt) *execution {
	x := &execution{client: a.Client, req: a.Request, attempt: a.N, key: a.Key, seq: a.Calls}
	b := &d.cfg.Business
	x.latency = b.Latency.draw(a.Rand)
	if b.RetryableRate > 0 || b.PermanentRate > 0 || b.AmbiguousRate > 0 {
		switch u := a.Rand.Float64(); {
		case u < b.RetryableRate:
			x.fail = failRetryable
		case u < b.RetryableRate+b.PermanentRate:
			x.fail = failPermanent
		case u < b.RetryableRate+b.PermanentRate+b.AmbiguousRate:
			x.fail = failAmbiguous
		}
	}
	return x
}

// draw returns one duration from l.
func (l *Latency) draw(rng *rand.Rand) time.Duration {
	switch l.Dist {
	case "fixed":
		return l.Mean
	case "uniform":
		if l.Max <= l.Min {
			return l.Min
		}
		return l.Min + time.Duration(rng.Int64N(int64(l.Max-l.Min)+1))
	case "exponential":
		d := l.Min + time.Duration(rng.ExpFloat64()*float64(l.Mean-l.Min))
		if l.Max > 0 {
			d = min(d, l.Max)
		}
		return max(d, 0)
	}
	return 0
}

// execID names an execution: "<client>.<seq>", or "p<client>.<seq>" for a
// probe.
func (x *execution) execID() string {
	var b []byte
	if x.probe {
		b = append(b, 'p')
	}
	b = strconv.AppendInt(b, int64(x.client), 10)
	b = append(b, '.')
	return string(strconv.AppendInt(b, x.seq, 10))
}

// business returns the idem.Func of execution x: it works for x.latency,
// fails if x says so (or if the fault injector forces it), else applies
// its effect to the sink and answers 201 "ok <key> <exec>" (see dress). It applies the
// effect even when ctx was cancelled meanwhile: it models a process that
// does not know it lost its lease.
func (d *driver) business(x *execution) idem.Func {
	return func(ctx context.Context) (idem.Response, error) {
		x.ran = true
		x.id = x.execID()
		l, _ := idem.LeaseFrom(ctx)
		if d.faults != nil {
			if err := d.faults.ForcedFailure(l); err != nil {
				return idem.Response{}, Retryable(err)
			}
		}
		if x.latency > 0 && !d.work(x.latency) {
			return idem.Response{}, Retryable(errRunEnded)
		}
		switch x.fail {
		case failRetryable:
			return idem.Response{}, Retryable(ErrRetryable)
		case failPermanent:
			return response(statusFailed, "failed", x), idem.Permanent(ErrPermanent)
		}
		resp := response(statusCreated, "ok", x)
		op := history.Op{
			Kind:    history.KindEffect,
			Client:  x.client,
			Worker:  x.client,
			Key:     x.key,
			Request: x.req,
			Attempt: x.attempt,
			Token:   uint64(l.Token),
			Exec:    x.id,
			Call:    d.now(),
		}
		applied, err := d.cfg.Sink.Apply(context.WithoutCancel(ctx), Effect{Key: x.key, Token: l.Token, Exec: x.id, Response: resp})
		op.Return = d.now()
		if err != nil {
			op.Outcome = history.Unknown
			op.Return = history.NoReturn
			op.Err = err.Error()
			d.rec.Record(op)
			return idem.Response{}, idem.MarkAmbiguous(err)
		}
		op.Applied = applied
		if _, tx := d.cfg.Sink.(TxSink); tx && applied {
			// Pending until the transaction commits: the ledger decides.
			op.Outcome = history.Unknown
			op.Return = history.NoReturn
		}
		if !applied {
			op.Err = ErrStale.Error()
		}
		d.rec.Record(op)
		if !applied {
			return response(statusConflict, "stale", x), idem.Permanent(ErrStale)
		}
		if x.fail == failAmbiguous {
			return resp, idem.MarkAmbiguous(ErrAmbiguous)
		}
		return resp, nil
	}
}

// The statuses the business function answers, as a payments API does: a
// success is created, a business failure is unprocessable, an effect the
// sink fenced off conflicts.
const (
	statusCreated  = 201
	statusFailed   = 422
	statusConflict = 409
)

// response builds "<word> <key> <exec>" with status and the headers dress
// derives from them.
func response(status int, word string, x *execution) idem.Response {
	b := make([]byte, 0, len(word)+len(x.key)+len(x.id)+2)
	b = append(b, word...)
	b = append(b, ' ')
	b = append(b, x.key...)
	b = append(b, ' ')
	b = append(b, x.id...)
	return dress(idem.Response{Status: status, Body: b})
}

// dress sets the headers of a business response from its status and body
// ("<word> <key> <exec>"): Content-Type always, and for a 201 Created its
// Location (/payments/<key>) and ETag ("<exec>"). A replay must give them
// back as they were (I3): a store that keeps only the body, or derives the
// status from the record's state, is caught. The headers are a function of
// status and body so that a sink that keeps only those (workload/pgsink,
// workload/redissink) hands the recovery hook the whole response back.
func dress(r idem.Response) idem.Response {
	h := map[string][]string{"Content-Type": {"text/plain; charset=utf-8"}}
	if r.Status == statusCreated {
		f := bytes.Fields(r.Body)
		if len(f) == 3 {
			h["Location"] = []string{"/payments/" + string(f[1])}
			h["Etag"] = []string{`"` + string(f[2]) + `"`}
		}
	}
	r.Header = h
	return r
}

// execOf returns the execution id a response names (its last word).
func execOf(r *idem.Response) string {
	if i := bytes.LastIndexByte(r.Body, ' '); i >= 0 {
		return string(r.Body[i+1:])
	}
	return ""
}

// recoverDressed asks r whether the effect of l's key happened and gives
// its response the headers the business gave it: a backend sink keeps only
// status and body.
func recoverDressed(ctx context.Context, r Recoverer, l idem.Lease) (idem.Response, bool, error) {
	resp, done, err := r.Recover(ctx, l.Key, l.Token)
	if done && err == nil {
		resp = dress(resp)
	}
	return resp, done, err
}
