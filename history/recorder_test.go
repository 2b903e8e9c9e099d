package history

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestRecorderConcurrent(t *testing.T) {
	const clients, perClient = 16, 3000
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			var b *Buffer
			if c%2 == 0 {
				b = r.Buffer()
			}
			for i := range perClient {
				op := Op{Kind: KindCall, Client: c, Request: int64(i), Call: int64(i*clients + c), Return: int64(i*clients + c + 1), Outcome: Error}
				if i%3 == 0 {
					op.Kind, op.Outcome, op.Transition = KindLease, OutcomeNone, TransitionHeartbeat
				}
				if b != nil {
					b.Record(op)
				} else {
					r.Record(op)
				}
			}
		})
	}
	wg.Wait()
	if n := r.Len(); n != clients*perClient {
		t.Fatalf("Len = %d, want %d", n, clients*perClient)
	}
	leases := clients * ((perClient + 2) / 3)
	if c, l, f := r.LenKind(KindCall), r.LenKind(KindLease), r.LenKind(KindFault); c != clients*perClient-leases || l != leases || f != 0 {
		t.Fatalf("LenKind: %d calls, %d leases, %d faults; want %d, %d, 0", c, l, f, clients*perClient-leases, leases)
	}
	if n := r.LenKind(Kind(200)); n != 0 {
		t.Fatalf("LenKind of an invalid kind = %d", n)
	}
	h := r.History(Header{Seed: 5})
	if h.Header.Format != Format || h.Header.Version != FormatVersion || h.Header.Clock != ClockName || h.Header.Seed != 5 {
		t.Errorf("header %+v", h.Header)
	}
	if len(h.Ops) != clients*perClient {
		t.Fatalf("got %d ops", len(h.Ops))
	}
	next := make([]int64, clients)
	for i, op := range h.Ops {
		if i > 0 && op.Call < h.Ops[i-1].Call {
			t.Fatalf("op %d out of Call order", i)
		}
		if op.Request != next[op.Client] {
			t.Fatalf("client %d: request %d, want %d (lost or reordered)", op.Client, op.Request, next[op.Client])
		}
		next[op.Client]++
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRecorderNegativeClient(t *testing.T) {
	r := NewRecorder()
	r.Record(Op{Kind: KindFault, Client: -1, Call: 1, Return: 2})
	if ops := r.Ops(); len(ops) != 1 {
		t.Fatalf("got %d ops", len(ops))
	}
}

// BenchmarkRecord measures recording with every goroutine sharing the
// Recorder (one shard lock per op); the driver needs at least 200,000
// ops/s, that is at most 5,000 ns/op.
func BenchmarkRecord(b *testing.B) {
	r := NewRecorder()
	var mu sync.Mutex
	client := 0
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		c := client
		client++
		mu.Unlock()
		op := Op{Kind: KindCall, Client: c, Key: "key-123", Outcome: Replayed, Resp: "0123456789abcdef"}
		for pb.Next() {
			op.Call = Now()
			op.Return = Now()
			r.Record(op)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkBufferRecord measures recording through per-goroutine Buffers.
func BenchmarkBufferRecord(b *testing.B) {
	r := NewRecorder()
	b.RunParallel(func(pb *testing.PB) {
		buf := r.Buffer()
		op := Op{Kind: KindCall, Key: "key-123", Outcome: Replayed, Resp: "0123456789abcdef"}
		for pb.Next() {
			op.Call = Now()
			op.Return = Now()
			buf.Record(op)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func TestSortByCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = Op{Call: int64(rng.IntN(n/3 + 1)), Request: int64(i)}
		}
		want := slices.Clone(ops)
		slices.SortStableFunc(want, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
		SortByCall(ops)
		if !slices.Equal(ops, want) {
			t.Fatalf("n=%d: SortByCall differs from a stable sort", n)
		}
	}
}

func BenchmarkSortByCall(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]Op, 1_000_000)
	for i := range src {
		src[i] = Op{Kind: KindCall, Call: rng.Int64N(1e12), Request: int64(i)}
	}
	ops := make([]Op, len(src))
	for b.Loop() {
		copy(ops, src)
		SortByCall(ops)
	}
}
