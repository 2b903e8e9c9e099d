package history_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/history"
)

func TestFault(t *testing.T) {
	cases := []struct {
		name string
		got  history.Op
		want history.Op
	}{
		{"window", history.Fault("net partition", 10, 20),
			history.Op{Kind: history.KindFault, Client: -1, Worker: -1, Label: "net partition", Call: 10, Return: 20}},
		{"worker", history.Fault("SIGSTOP", 5, 9).OnWorker(2),
			history.Op{Kind: history.KindFault, Client: -1, Worker: 2, Label: "SIGSTOP", Call: 5, Return: 9}},
		{"key", history.Fault("crash", 7, 7).OnWorker(1).OnKey("k", 4),
			history.Op{Kind: history.KindFault, Client: -1, Worker: 1, Key: "k", Token: 4, Label: "crash", Call: 7, Return: 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, c.got); d != "" {
				t.Fatalf("(-want +got)\n%s", d)
			}
			if err := c.got.Validate(); err != nil {
				t.Fatalf("a fault window does not validate: %v", err)
			}
		})
	}
}
