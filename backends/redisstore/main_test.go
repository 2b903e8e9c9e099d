package redisstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietLogger drops go-redis's internal log lines (dial failures the tests
// provoke on purpose).
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// TestMain silences go-redis and checks that no goroutine outlives the
// tests: WaitChange's subscriptions and the fault proxies must all be
// closed.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m)
}
