//go:build linux

package servers_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/chaos/servers"
)

// A backend-restart fault against Redis with an fsynced AOF: the
// acknowledged write survives the crash. (Compiled, not run: it needs
// redis-server; the package tests run the same steps.)
func ExampleRedis_Restart() {
	ctx := context.Background()
	srv, err := servers.StartRedis(ctx, servers.RedisOptions{Persistence: servers.AOFAlways})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	opts, _ := redis.ParseURL(srv.URL())
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	rdb.Set(ctx, "k", "v", 0)
	if err := srv.Restart(ctx); err != nil { // SIGKILL, then start again
		log.Fatal(err)
	}
	v, _ := rdb.Get(ctx, "k").Result() // "v"; with servers.None: redis.Nil
	_ = v
}

// A CLI stops every server when interrupted.
func ExampleStopAll() {
	// In main: signal.Notify(sigs, os.Interrupt, syscall.SIGTERM), then on a
	// signal:
	if err := servers.StopAll(); err != nil {
		log.Print(err)
	}
}
