package pgstore

import (
	"context"
	"sync"
	"time"
)

// sweepMargin is how long a row stays absent before the sweeper may delete
// it. Until then a new claim of the key overwrites the row in place and draws
// its token under the row lock. A claim that finds no row draws its token a
// moment before inserting; the margin makes sure that no row with a higher
// token can have come and gone in that moment, so tokens never go down for a
// key, whatever the retention or TTLs.
const sweepMargin = time.Minute

// Sweep deletes the rows of absent records (past ExpiresAt, or released,
// for at least a minute) in batches of at most Options.SweepBatch rows, one statement per batch, until a
// batch comes back short, and returns how many rows it deleted. Several
// sweepers, in one process or many, may run at once: each batch locks the
// rows it picks with FOR UPDATE SKIP LOCKED, so they split the work, never
// wait on each other and never delete a row twice. A row that a claim revives
// while a sweep runs is not deleted. Sweeping is only housekeeping: absent
// rows are already invisible to every other operation.
//
// On an error Sweep returns the rows deleted so far with the error; the
// deleted rows stay deleted. ctx is checked between batches.
func (s *Store) Sweep(ctx context.Context) (removed int, err error) {
	for {
		n, err := s.exec(ctx, "sweep", false, s.sql.sweep, s.opts.SweepBatch, sweepMargin)
		removed += int(n)
		if err != nil {
			return removed, err
		}
		if n < int64(s.opts.SweepBatch) {
			return removed, nil
		}
		if err := ctx.Err(); err != nil {
			return removed, err
		}
	}
}

// StartSweeper runs Sweep in a goroutine at once and then every
// Options.SweepInterval (default every minute, batches of 1000 rows) until ctx
// ends or stop is called. Errors go to Options.OnSweepError when set; the
// next tick retries. stop cancels a sweep in progress, waits for the
// goroutine to return, and may be called more than once.
func (s *Store) StartSweeper(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.opts.SweepInterval)
		defer t.Stop()
		for {
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil && s.opts.OnSweepError != nil {
				s.opts.OnSweepError(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
