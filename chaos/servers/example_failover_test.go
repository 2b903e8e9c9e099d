//go:build linux

package servers_test

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// An aimed failover: complete a request through the engine, kill the
// primary right after it acknowledged the completion, and look for the
// record on the promoted replica. With the 200ms lag and no WAIT the
// record is gone; with WaitReplicas: 1 it survives. (Compiled, not run:
// it needs redis-server; the package tests run the same steps.)
func ExampleRedisSentinel_Failover() {
	ctx := context.Background()
	topo, err := servers.StartRedisSentinel(ctx, servers.RedisSentinelOptions{
		ReplicationLag: []time.Duration{200 * time.Millisecond},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer topo.Stop()
	client := redis.NewFailoverClient(topo.FailoverOptions()) // follows the Sentinels
	defer client.Close()
	store, _ := redisstore.New(client, redisstore.Options{WaitReplicas: 1})
	engine := idem.New(store)
	defer engine.Close()

	fp := idem.FingerprintString("charge", "42")
	_, err = engine.Do(ctx, "order-42", fp, func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 200, Body: []byte("charged")}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	window, err := topo.Failover(ctx, "order-42") // SIGKILL the primary, wait for the promotion
	if err != nil {
		log.Fatal(err)
	}
	var h history.History
	h.Ops = append(h.Ops, window) // the fault window, shaded in reports
	rec, err := store.Get(ctx, "order-42")
	log.Println(rec, err) // completed: WAIT 1 kept it; without WAIT, idem.ErrNotFound
}

// PostgreSQL with a synchronous standby: pgx follows the promotion through
// the multi-host URL, and CheckReplication confirms the setting.
func ExamplePostgresReplicated_Failover() {
	ctx := context.Background()
	topo, err := servers.StartPostgresReplicated(ctx, servers.PostgresReplicatedOptions{SynchronousCommit: "on"})
	if err != nil {
		log.Fatal(err)
	}
	defer topo.Stop()
	pool, _ := pgxpool.New(ctx, topo.URL()) // target_session_attrs=read-write
	defer pool.Close()
	store, _ := pgstore.New(pool, pgstore.Options{})
	_ = store.Migrate(ctx)
	if _, err := store.CheckReplication(ctx); err != nil {
		log.Fatal(err) // ErrAsyncReplication without SynchronousCommit
	}
	// ... engine.Do(...), then:
	if _, err := topo.Failover(ctx, ""); err != nil { // SIGKILL, then pg_ctl promote
		log.Fatal(err)
	}
}
