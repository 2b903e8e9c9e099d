package workload_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// TestClientBase: two runs with different client bases and the same seed
// and prefix draw the same keys under disjoint client and execution ids,
// as the worker processes of one run do.
func TestClientBase(t *testing.T) {
	keys := make([]map[string]bool, 2)
	for i, base := range []int{0, 100} {
		res, err := workload.Run(context.Background(), workload.Config{
			Seed: 1, Duration: 50 * time.Millisecond, Clients: 2, ClientBase: base, NoProbe: true,
			Store: newStore(t, nil), Sink: mustSink(t, workload.SinkPlain),
		})
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = map[string]bool{}
		for _, op := range res.Recorder.Ops() {
			if op.Kind != history.KindCall {
				continue
			}
			if op.Client < base || op.Client >= base+2 {
				t.Fatalf("base %d: call by client %d", base, op.Client)
			}
			if op.Exec != "" && base > 0 && !strings.HasPrefix(op.Exec, "10") {
				t.Fatalf("base %d: exec id %q does not carry the client id", base, op.Exec)
			}
			keys[i][op.Key] = true
		}
	}
	shared := 0
	for k := range keys[1] {
		if keys[0][k] {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("runs with the same seed and prefix drew no common key")
	}
}
