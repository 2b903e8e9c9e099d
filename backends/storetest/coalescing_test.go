package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMedianCI checks the ranks of the median's 95 % bounds against the
// binomial table (n = 15: 4th and 12th; n = 21: 6th and 16th; n = 9: 2nd
// and 8th) and that, on draws from one distribution, they cover its
// median in about 95 % of samples.
func TestMedianCI(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{5, 1}, {6, 1}, {9, 2}, {15, 4}, {21, 6}, {25, 8}} {
		xs := make([]float64, tc.n)
		for i := range xs {
			xs[i] = float64(tc.n - i) // reversed: medianCI sorts
		}
		lo, hi := medianCI(xs)
		if lo != float64(tc.k) || hi != float64(tc.n+1-tc.k) {
			t.Errorf("n=%d: bounds %v, %v; want ranks %d and %d", tc.n, lo, hi, tc.k, tc.n+1-tc.k)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	const samples = 4000
	covered := 0
	for range samples {
		xs := make([]float64, 21)
		for i := range xs {
			xs[i] = r.NormFloat64()
		}
		if lo, hi := medianCI(xs); lo <= 0 && 0 <= hi {
			covered++
		}
	}
	if c := float64(covered) / samples; c < 0.94 || c > 0.985 {
		t.Errorf("the bounds covered the median in %.3f of samples, want about 0.95-0.97", c)
	}
}

// fatalRecorder records Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// TestBenchRounds: IDEM_BENCH_ROUNDS replaces the default; a value that is
// not a whole number from 6 to 1000 is refused with a message naming it.
func TestBenchRounds(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
		bad  bool
	}{{"", 21, false}, {"84", 84, false}, {"6", 6, false}, {"5", 0, true}, {"1001", 0, true}, {"many", 0, true}, {"21.5", 0, true}} {
		t.Setenv(BenchRoundsEnv, tc.env)
		f := &fatalRecorder{TB: t}
		n := benchRounds(f, 21)
		switch {
		case tc.bad && !strings.Contains(f.msg, BenchRoundsEnv+"=\""+tc.env+"\""):
			t.Errorf("%s=%q: message %q, want one naming the value", BenchRoundsEnv, tc.env, f.msg)
		case !tc.bad && (f.msg != "" || n != tc.want):
			t.Errorf("%s=%q: %d rounds (message %q), want %d", BenchRoundsEnv, tc.env, n, f.msg, tc.want)
		}
	}
}
