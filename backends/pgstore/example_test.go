package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/idem"
)

// The examples need a PostgreSQL server, so they are compiled but not run;
// the package tests run the same calls against a real server.

// A store for the engine: migrate once, sweep in the background.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{}) // table idem_keys
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	stop := store.StartSweeper(ctx) // every minute, 1000 rows a batch
	defer stop()

	engine := idem.New(store)
	res, err := engine.Do(ctx, "order-42", idem.FingerprintString("POST /orders", `{"sku":"x"}`),
		func(ctx context.Context) (idem.Response, error) {
			return idem.Response{Status: 201, Body: []byte(`{"id":42}`)}, nil
		})
	fmt.Println(res.Response.Status, res.Replayed, err)
}

// Transactional mode: the order row and the completed record commit
// together; a stale holder's insert rolls back.
func ExampleStore_DoTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := store.DoTx(ctx, "order-42", idem.FingerprintString("POST /orders", `{"sku":"x"}`), pgstore.TxOptions{},
		func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
			lease, _ := idem.LeaseFrom(ctx)
			if _, err := tx.Exec(ctx, `INSERT INTO orders (id, sku, token) VALUES (42, 'x', $1)`, int64(lease.Token)); err != nil {
				return idem.Response{}, err // retryable: rolled back, key released
			}
			return idem.Response{Status: 201, Body: []byte(`{"id":42}`)}, nil
		})
	switch {
	case errors.Is(err, idem.ErrInProgress):
		fmt.Println("409: retry later")
	case errors.Is(err, idem.ErrLeaseLost):
		fmt.Println("taken over: nothing committed")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println(res.Response.Status, res.Replayed)
	}
}

// A fenced side effect in the holder's transaction: a stale holder's token is
// refused and its effect is skipped.
func ExampleStore_ApplyFenced() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		applied, err := store.ApplyFenced(ctx, tx, "charge:order-42", 17)
		if err != nil || !applied {
			return err // stale token: do nothing
		}
		_, err = tx.Exec(ctx, `UPDATE accounts SET balance = balance - 100 WHERE id = 1`)
		return err
	})
	fmt.Println(err)
}
