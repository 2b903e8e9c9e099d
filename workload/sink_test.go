package workload_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

func TestSinks(t *testing.T) {
	ctx := context.Background()
	eff := func(tok idem.Token, exec string) workload.Effect {
		return workload.Effect{Key: "k", Token: tok, Exec: exec, Response: idem.Response{Status: 200, Body: []byte(exec)}}
	}
	cases := []struct {
		sink    string
		applied []bool // for tokens 2, 3, 1
	}{
		{workload.SinkPlain, []bool{true, true, true}},
		{workload.SinkFenced, []bool{true, true, false}},
	}
	for _, c := range cases {
		t.Run(c.sink, func(t *testing.T) {
			s := mustSink(t, c.sink)
			for i, e := range []workload.Effect{eff(2, "a"), eff(3, "b"), eff(1, "c")} {
				got, err := s.Apply(ctx, e)
				if err != nil || got != c.applied[i] {
					t.Fatalf("apply %d: %t, %v; want %t", i, got, err, c.applied[i])
				}
			}
			l := s.Ledger()
			if a, ok := l.Lookup("k", "c"); !ok || a != c.applied[2] {
				t.Fatalf("lookup c: %t %t", a, ok)
			}
			if _, ok := l.Lookup("k", "zz"); ok {
				t.Fatal("lookup of an unseen execution")
			}
			st := l.Stats()
			if st.Keys != 1 || st.Doubled != 1 || st.Applied+st.Rejected != 3 {
				t.Fatalf("stats %+v", st)
			}
			if len(l.Applied("k")) != st.Applied {
				t.Fatal("Applied disagrees with Stats")
			}
		})
	}
	r, ok := mustSink(t, workload.SinkFenced).(workload.Recoverer)
	if !ok {
		t.Fatal("fenced sink cannot recover")
	}
	if _, done, _ := r.Recover(ctx, "k", 1); done {
		t.Fatal("recovered an effect that never happened")
	}
	fs := r.(workload.Sink)
	fs.Apply(ctx, eff(4, "first"))
	fs.Apply(ctx, eff(5, "second"))
	resp, done, err := r.Recover(ctx, "k", 1)
	if err != nil || !done || string(resp.Body) != "first" {
		t.Fatalf("recover: %q %t %v", resp.Body, done, err)
	}
	if _, ok := mustSink(t, workload.SinkPlain).(workload.Recoverer); ok {
		t.Fatal("plain sink claims recovery")
	}
	if _, err := workload.NewSink(workload.SinkTx); !errors.Is(err, workload.ErrUnsupported) {
		t.Fatalf("tx sink: %v", err)
	}
	if _, err := workload.NewSink("paper"); !errors.Is(err, workload.ErrConfig) {
		t.Fatalf("unknown sink: %v", err)
	}
}
