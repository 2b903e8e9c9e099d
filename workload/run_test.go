package workload_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/workload"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustSink(t *testing.T, name string) workload.Sink {
	t.Helper()
	s, err := workload.NewSink(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunThroughputSmoke(t *testing.T) {
	st := memstore.New(memstore.Options{SweepInterval: -1})
	defer st.Close()
	res, err := workload.Run(context.Background(), workload.Config{
		Seed: 1, Duration: 2*time.Second, Clients: 64, Store: st, Sink: mustSink(t, "fenced"),
		Engine: workload.Engine{LeaseTTL: time.Second, Recovery: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	ops := res.Recorder.Ops()
	s := workload.Summarize(ops, res)
	t.Logf("%+v", s)
	t.Logf("ledger %+v", res.Ledger.Stats())
}
