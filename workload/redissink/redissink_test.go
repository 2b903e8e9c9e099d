package redissink_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/workload/internal/sinktest"
	"github.com/idembench/idembench/workload/redissink"
)

func TestFencedSink(t *testing.T) {
	opt, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	client := redis.NewClient(opt)
	defer client.Close()
	sinktest.FenceOnRecover(t, redissink.New(client, redissink.Options{Fenced: true}))
}
