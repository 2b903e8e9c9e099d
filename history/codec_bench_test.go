package history

import (
	"bytes"
	"fmt"
	"testing"
)

func benchHistory(n int) *History {
	h := &History{Header: Header{Seed: 1}}
	for i := range n {
		h.Ops = append(h.Ops, Op{Kind: KindCall, Client: i % 64, Worker: i % 8, Key: fmt.Sprintf("key-%d", i%10000),
			Request: int64(i), Attempt: 1, FP: "fp12", Call: int64(1e12 + i*1000), Return: int64(1e12 + i*1000 + 500),
			Outcome: Replayed, Resp: "0123456789abcdef0123456789abcdef"})
	}
	return h
}

// BenchmarkEncode reports encoding speed in ops per second.
func BenchmarkEncode(b *testing.B) {
	h := benchHistory(100000)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Encode(&buf, h); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(h.Ops))/b.Elapsed().Seconds(), "ops/s")
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkDecode reports decoding speed in ops per second.
func BenchmarkDecode(b *testing.B) {
	h := benchHistory(100000)
	var buf bytes.Buffer
	if err := Encode(&buf, h); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := Decode(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(h.Ops))/b.Elapsed().Seconds(), "ops/s")
}
