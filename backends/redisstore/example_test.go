package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// The examples need a Redis server, so they are compiled but not run (no
// Output comment); the tests run the same calls against a real server.

func ExampleNew() {
	ctx := context.Background()
	// One address: a single node. Several: Redis Cluster. Same store code.
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer client.Close()

	store, err := redisstore.New(client, redisstore.Options{Prefix: "payments"})
	if err != nil {
		log.Fatal(err)
	}
	switch err := store.CheckConfig(ctx); {
	case errors.Is(err, redisstore.ErrConfigUnchecked):
		log.Printf("cannot verify maxmemory-policy, make sure it is noeviction: %v", err)
	case err != nil:
		log.Fatal(err) // another eviction policy, or Redis is unreachable
	}

	engine := idem.New(store, idem.WithConflictWait(idem.DefaultLeaseTTL, 0))
	fp := idem.FingerprintString("POST", "/payments", `{"amount":100}`)
	res, err := engine.Do(ctx, "order-42", fp, func(ctx context.Context) (idem.Response, error) {
		return idem.Response{Status: 201, Body: []byte(`{"payment":"p_1"}`)}, nil
	})
	fmt.Println(res.Response.Status, res.Replayed, err)
}

func ExampleFencedSink_ApplyFenced() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	store, _ := redisstore.New(client, redisstore.Options{})
	sink, _ := redisstore.NewFencedSink(client, "")
	engine := idem.New(store)

	fp := idem.FingerprintString("ship", "order-42")
	_, err := engine.Do(ctx, "ship-order-42", fp, func(ctx context.Context) (idem.Response, error) {
		lease, _ := idem.LeaseFrom(ctx)
		// A holder whose lease was taken over while it stalled carries an
		// older token than its successor: its late write is rejected here.
		applied, err := sink.ApplyFenced(ctx, "shipment:order-42", lease.Token, "shipped")
		if err != nil {
			return idem.Response{}, err
		}
		if !applied {
			return idem.Response{}, idem.ErrLeaseLost
		}
		return idem.Response{Status: 200}, nil
	})
	fmt.Println(err)
}
