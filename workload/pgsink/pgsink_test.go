package pgsink_test

import (
	"context"
	"testing"

	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/workload/internal/sinktest"
	"github.com/idembench/idembench/workload/pgsink"
)

func TestFencedSink(t *testing.T) {
	s, err := pgsink.Open(context.Background(), testenv.PostgresURL(t), pgsink.Options{Fenced: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sinktest.FenceOnRecover(t, s)
}
