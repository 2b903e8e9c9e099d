package idemotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemotel"
)

var (
	fpA = idem.FingerprintString("POST", "/pay", "a")
	fpB = idem.FingerprintString("POST", "/pay", "b")
)

func ok(context.Context) (idem.Response, error) { return idem.Response{Status: 201}, nil }

// counts returns the idem.transitions data points as transition/outcome[/op] -> value,
// and checks every point's backend attribute.
func counts(t *testing.T, rm metricdata.ResourceMetrics, backend string) (map[string]int64, map[string]uint64) {
	t.Helper()
	sums, hists := map[string]int64{}, map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != idemotel.ScopeName {
			t.Fatalf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sums[label(t, p.Attributes, backend)] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					hists[m.Name+" "+label(t, p.Attributes, backend)] += p.Count
				}
			}
		}
	}
	return sums, hists
}

func label(t *testing.T, set attribute.Set, backend string) string {
	t.Helper()
	if v, _ := set.Value("backend"); v.AsString() != backend {
		t.Fatalf("backend attribute %q", v.AsString())
	}
	tr, _ := set.Value("transition")
	oc, _ := set.Value("outcome")
	s := tr.AsString() + "/" + oc.AsString()
	if op, has := set.Value("op"); has {
		s += "/" + op.AsString()
	}
	return s
}

func TestTransitionCountsAndDurations(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := idemotel.New(idemotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Backend: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	clock := memstore.NewManualClock(time.Unix(1e9, 0))
	store := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
	defer store.Close()
	eng := idem.New(store, idem.WithObserver(tel.Observer()), idem.WithLeaseTTL(time.Minute), idem.WithHeartbeat(-1))
	ctx := context.Background()

	_, _ = eng.Do(ctx, "a", fpA, ok) // acquired, completed
	_, _ = eng.Do(ctx, "a", fpA, ok) // replayed
	_, _ = eng.Do(ctx, "a", fpA, ok) // replayed
	_, _ = eng.Do(ctx, "a", fpB, ok) // mismatch
	_, _ = eng.Do(ctx, "b", fpA, func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 400}, idem.Permanent(errors.New("declined"))
	}) // acquired, failed
	_, _ = eng.Do(ctx, "b", fpA, ok) // replayed (failed)
	_, _ = eng.Do(ctx, "c", fpA, func(ctx context.Context) (idem.Response, error) {
		_, _ = eng.Do(ctx, "c", fpA, ok) // conflict
		clock.Advance(2 * time.Minute)
		_, _ = eng.Do(ctx, "c", fpA, ok) // taken_over, completed
		return idem.Response{Status: 201}, nil
	}) // acquired ... lease_lost/complete

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums, hists := counts(t, rm, "memory")
	want := map[string]int64{
		"acquired/ok":               3,
		"completed/ok":              2,
		"replayed/completed":        2,
		"replayed/failed":           1,
		"mismatch/completed":        1,
		"failed/ok":                 1,
		"conflict/in_progress":      1,
		"taken_over/ok":             1,
		"lease_lost/error/complete": 1,
	}
	for k, v := range want {
		if sums[k] != v {
			t.Errorf("%s = %d, want %d", k, sums[k], v)
		}
	}
	for k := range sums {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s = %d", k, sums[k])
		}
	}
	// One claim measurement per Acquire call (3 acquired + 1 taken over +
	// 3 replays + mismatch + conflict), one func and one finish per
	// recorded outcome (2 completed, 1 failed, 1 lease lost).
	var claims, funcs, finishes uint64
	for k, n := range hists {
		switch {
		case len(k) > 19 && k[:19] == "idem.claim.duration":
			claims += n
		case len(k) > 18 && k[:18] == "idem.func.duration":
			funcs += n
		case len(k) > 20 && k[:20] == "idem.finish.duration":
			finishes += n
		}
	}
	if claims != 9 || funcs != 4 || finishes != 4 {
		t.Fatalf("histogram counts claim %d func %d finish %d, want 9 4 4 (%v)", claims, funcs, finishes, hists)
	}
}

func TestSpanAroundDoWithEvents(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel, err := idemotel.New(idemotel.Options{
		MeterProvider: sdkmetric.NewMeterProvider(), TracerProvider: tp, SpanEvents: true, Backend: "memory",
	})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(memstore.Options{SweepInterval: -1})
	defer store.Close()
	eng := idem.New(store, idem.WithObserver(tel.Observer()))
	ctx := context.Background()
	if _, err := tel.DoScoped(ctx, eng, "acme", "secret-key-1", fpA, ok); err != nil {
		t.Fatal(err)
	}
	if res, err := tel.DoScoped(ctx, eng, "acme", "secret-key-1", fpA, ok); err != nil || !res.Replayed {
		t.Fatalf("replay: %+v %v", res, err)
	}
	_, _ = tel.DoScoped(ctx, eng, "acme", "secret-key-1", fpB, ok)
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	wantEvents := [][]string{{"idem.acquired", "idem.completed"}, {"idem.replayed"}, {"idem.mismatch"}}
	for i, s := range spans {
		if s.Name() != "idem.Do" {
			t.Fatalf("span %q", s.Name())
		}
		var names []string
		for _, ev := range s.Events() {
			names = append(names, ev.Name)
		}
		if len(names) != len(wantEvents[i]) || (len(names) > 0 && names[0] != wantEvents[i][0]) {
			t.Fatalf("span %d events %v, want %v", i, names, wantEvents[i])
		}
		for _, kv := range s.Attributes() {
			if kv.Value.Emit() == "secret-key-1" || kv.Value.Emit() == "acme:secret-key-1" {
				t.Fatalf("span %d records the key in %s", i, kv.Key)
			}
		}
		if s.Status().Code.String() == "Error" {
			t.Fatalf("span %d error status %q: refusals are not errors", i, s.Status().Description)
		}
	}
	replayed := false
	for _, kv := range spans[1].Attributes() {
		if kv.Key == "idem.replayed" {
			replayed = kv.Value.AsBool()
		}
	}
	if !replayed {
		t.Fatal("second span not marked idem.replayed")
	}
}
