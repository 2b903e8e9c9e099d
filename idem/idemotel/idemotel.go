// Package idemotel turns the idempotency engine's observer hook
// (idem.WithObserver) into OpenTelemetry metrics, and optionally into span
// events and a span around Engine.Do. It tells a replay from a first
// execution, a take-over after a crash from a fresh claim, and a lost lease
// from a completion.
//
// Instruments (names as OpenTelemetry reports them; the Prometheus exporter
// appends _total and the unit, e.g. idem_transitions_total and
// idem_claim_duration_seconds):
//
//	idem.transitions     counter     one per transition
//	idem.claim.duration  histogram   s, the Acquire call of a claim step
//	idem.func.duration   histogram   s, the guarded function
//	idem.finish.duration histogram   s, the store call that recorded the outcome
//
// Every measurement carries bounded attributes only: transition (one of
// idem.Transitions), outcome (ok, completed, failed, in_progress, error,
// ambiguous), backend (Options.Backend) and, on lease losses and backend
// errors, op (acquire, heartbeat, complete, fail, release, recover). Keys
// and tokens are never attributes: use idem/idemslog for a per-key audit
// log.
//
// The package depends on go.opentelemetry.io/otel only; package idem does
// not.
package idemotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idembench/idembench/idem"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/idembench/idembench/idem/idemotel"

// Outcomes, the values of the outcome attribute.
const (
	OutcomeOK         = "ok"          // the transition happened as named
	OutcomeCompleted  = "completed"   // replayed/conflict/mismatch of a completed record
	OutcomeFailed     = "failed"      // ... of a stored failure
	OutcomeInProgress = "in_progress" // ... of a record in progress
	OutcomeError      = "error"       // the event carries an error known not applied
	OutcomeAmbiguous  = "ambiguous"   // the error may have been applied (idem.Ambiguous)
)

// Options configures New. The zero value uses the global providers and no
// backend attribute value ("").
type Options struct {
	// MeterProvider provides the meter. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, makes Telemetry.DoScoped run Do inside a
	// span named "idem.Do". Nil means no spans of our own.
	TracerProvider trace.TracerProvider
	// SpanEvents adds one event per transition (named idem.<transition>,
	// with the attributes above and the token) to the span in the
	// observer's ctx, when it is recording: the caller's own span, such as
	// otelhttp's server span, or the one DoScoped started.
	SpanEvents bool
	// Backend is the value of the backend attribute: "memory", "redis",
	// "postgres", or any short fixed name. Keep it constant per engine.
	Backend string
}

// Telemetry records the engine's transitions. Create one per engine (per
// backend) and install Observer with idem.WithObserver. It is safe for
// concurrent use.
type Telemetry struct {
	opts        Options
	transitions metric.Int64Counter
	claim       metric.Float64Histogram
	fn          metric.Float64Histogram
	finish      metric.Float64Histogram
	tracer      trace.Tracer // nil without a TracerProvider
	// measures holds the options of every combination of the bounded
	// attributes, built once so that recording allocates nothing more:
	// [transition][outcome index][op index].
	measures [][len(outcomes)][len(ops)]measure
}

// measure is the attribute set of one combination as measurement options.
type measure struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// attrKey is one combination of the bounded attributes.
type attrKey struct {
	transition idem.Transition
	outcome    string
	op         string
}

// outcomes and ops list the values of the outcome and op attributes.
var (
	outcomes = [...]string{OutcomeOK, OutcomeCompleted, OutcomeFailed, OutcomeInProgress, OutcomeError, OutcomeAmbiguous}
	ops      = [...]string{"", idem.OpAcquire, idem.OpHeartbeat, idem.OpComplete, idem.OpFail, idem.OpRelease, idem.OpRecover}
)

// index returns the position of v in list, or -1.
func index(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// durationBuckets spans 100µs to 30s, in seconds.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// New creates the instruments. It fails only if the meter provider refuses
// to create them.
func New(opts Options) (*Telemetry, error) {
	mp := opts.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName)
	t := &Telemetry{opts: opts}
	var err, e error
	t.transitions, e = m.Int64Counter("idem.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Transitions of idempotency keys as the engine saw them."))
	err = errors.Join(err, e)
	hist := func(name, desc string) metric.Float64Histogram {
		h, e := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		err = errors.Join(err, e)
		return h
	}
	t.claim = hist("idem.claim.duration", "Duration of the Acquire call of a claim step.")
	t.fn = hist("idem.func.duration", "Duration of the guarded function.")
	t.finish = hist("idem.finish.duration", "Duration of the store call that recorded the outcome.")
	if err != nil {
		return nil, err
	}
	if opts.TracerProvider != nil {
		t.tracer = opts.TracerProvider.Tracer(ScopeName)
	}
	all := idem.Transitions()
	t.measures = make([][len(outcomes)][len(ops)]measure, int(all[len(all)-1])+1)
	for _, tr := range all {
		for oi, oc := range outcomes {
			for pi, op := range ops {
				o := metric.WithAttributeSet(t.attributeSet(attrKey{tr, oc, op}))
				t.measures[tr][oi][pi] = measure{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
			}
		}
	}
	return t, nil
}

// Observer returns the idem.Observer that records every transition.
func (t *Telemetry) Observer() idem.Observer { return t.observe }

func (t *Telemetry) observe(ctx context.Context, ev idem.Event) {
	k := attrKey{transition: ev.Transition, outcome: outcome(ev), op: ev.Op}
	m := t.measure(k)
	t.transitions.Add(ctx, 1, m.add...)
	if ev.Claim > 0 && ev.AnswersClaim() {
		t.claim.Record(ctx, ev.Claim.Seconds(), m.rec...)
	}
	if ev.Func > 0 {
		t.fn.Record(ctx, ev.Func.Seconds(), m.rec...)
	}
	if ev.Finish > 0 {
		t.finish.Record(ctx, ev.Finish.Seconds(), m.rec...)
	}
	if t.opts.SpanEvents {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			t.spanEvent(span, k, ev)
		}
	}
}

// measure returns the prebuilt options of k; a combination outside the
// known values (a transition or op added to idem later) is built on the
// spot.
func (t *Telemetry) measure(k attrKey) measure {
	oi, pi := index(outcomes[:], k.outcome), index(ops[:], k.op)
	if int(k.transition) < len(t.measures) && oi >= 0 && pi >= 0 {
		return t.measures[k.transition][oi][pi]
	}
	o := metric.WithAttributeSet(t.attributeSet(k))
	return measure{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
}

// outcome returns the outcome attribute of ev.
func outcome(ev idem.Event) string {
	switch {
	case ev.Err != nil && idem.Ambiguous(ev.Err):
		return OutcomeAmbiguous
	case ev.Err != nil:
		return OutcomeError
	}
	switch ev.Status {
	case idem.StatusCompleted:
		return OutcomeCompleted
	case idem.StatusFailed:
		return OutcomeFailed
	case idem.StatusInProgress:
		return OutcomeInProgress
	}
	return OutcomeOK
}

func (t *Telemetry) attributeSet(k attrKey) attribute.Set {
	kv := []attribute.KeyValue{
		attribute.String("transition", k.transition.String()),
		attribute.String("outcome", k.outcome),
		attribute.String("backend", t.opts.Backend),
	}
	if k.op != "" {
		kv = append(kv, attribute.String("op", k.op))
	}
	return attribute.NewSet(kv...)
}

func (t *Telemetry) spanEvent(span trace.Span, k attrKey, ev idem.Event) {
	set := t.attributeSet(k)
	kv := append(set.ToSlice(), attribute.Int64("idem.token", int64(ev.Token)))
	if ev.PrevToken != 0 {
		kv = append(kv, attribute.Int64("idem.prev_token", int64(ev.PrevToken)))
	}
	span.AddEvent("idem."+ev.Transition.String(), trace.WithAttributes(kv...))
}
