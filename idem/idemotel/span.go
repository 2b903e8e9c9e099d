package idemotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idembench/idembench/idem"
)

// DoScoped runs e.DoScoped inside a span named "idem.Do" when
// Options.TracerProvider is set, and calls it directly otherwise. The span
// records idem.replayed, idem.recovered, idem.failed and idem.token, and an
// error status naming the kind of error (lease_lost, backend_error, ...,
// never its text, which may quote the key) for every error except the
// refusals the caller answers
// (idem.ErrInProgress, idem.ErrFingerprintMismatch, idem.ErrInvalidKey).
// With Options.SpanEvents the observer adds the transitions to it as
// events. Keys are not recorded.
func (t *Telemetry) DoScoped(ctx context.Context, e *idem.Engine, scope, key string, fp idem.Fingerprint, fn idem.Func) (idem.Result, error) {
	if t.tracer == nil {
		return e.DoScoped(ctx, scope, key, fp, fn)
	}
	ctx, span := t.tracer.Start(ctx, "idem.Do", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("idem.backend", t.opts.Backend)))
	defer span.End()
	res, err := e.DoScoped(ctx, scope, key, fp, fn)
	span.SetAttributes(
		attribute.Bool("idem.replayed", res.Replayed),
		attribute.Bool("idem.recovered", res.Recovered),
		attribute.Bool("idem.failed", res.Failed),
		attribute.Int64("idem.token", int64(res.Token)),
	)
	if err != nil && !refusal(err) {
		span.SetStatus(codes.Error, errorClass(err))
	}
	return res, err
}

// errorClass names the kind of err without its text, which may quote the
// key.
func errorClass(err error) string {
	switch {
	case errors.Is(err, idem.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, idem.ErrAborted):
		return "aborted"
	case idem.Ambiguous(err):
		return "ambiguous"
	case errors.Is(err, idem.ErrBackend):
		return "backend_error"
	case errors.Is(err, idem.ErrCorruptRecord):
		return "corrupt_record"
	}
	return "function_error"
}

// refusal reports whether err is an answer to the caller rather than a
// failure.
func refusal(err error) bool {
	return errors.Is(err, idem.ErrInProgress) || errors.Is(err, idem.ErrFingerprintMismatch) ||
		errors.Is(err, idem.ErrInvalidKey)
}
