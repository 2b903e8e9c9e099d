package cli

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// silentRedis is a go-redis logger that drops everything: the CLI says
// what went wrong with a server itself (with a hint), and a raw go-redis
// log line before that only confuses.
type silentRedis struct{}

func (silentRedis) Printf(context.Context, string, ...any) {}

// quietRedis silences go-redis's own logging for the process.
func quietRedis() { redis.SetLogger(silentRedis{}) }
