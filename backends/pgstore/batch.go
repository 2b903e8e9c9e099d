package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/idem"
)

// AcquireBatch implements idem.BatchStore: the statement Acquire runs, once
// per key, sent in one pipeline (pgx.Batch) that PostgreSQL runs as one
// implicit transaction: one round trip and one commit for the whole batch.
// The keys are claimed in key order, so two batches never wait on each
// other's row locks in a cycle. A key whose statement saw an older snapshot
// (see Acquire) is claimed again on its own after the batch committed. If
// any statement or the commit fails, nothing of the batch was claimed and
// every key gets the error (ambiguous when the connection failed after
// sending).
func (s *Store) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, leaseTTL time.Duration) []idem.AcquireResult {
	if err := idem.ValidateLeaseTTL(leaseTTL); err != nil {
		return idem.AcquireBatchFailed(len(reqs), fmt.Errorf("pgstore: acquire: %w", err))
	}
	out := make([]idem.AcquireResult, len(reqs))
	order := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if err := idem.ValidateKey(r.Key); err != nil {
			out[i].Err = fmt.Errorf("pgstore: acquire: %w", err)
			continue
		}
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(reqs[a].Key, reqs[b].Key) })
	var b pgx.Batch
	for _, i := range order {
		b.Queue(s.sql.acquire, reqs[i].Key, reqs[i].Fingerprint[:], leaseTTL, s.opts.TakeoverGrace, "")
	}
	rows := make([]row, len(order))
	flags := make([][3]bool, len(order)) // acquired, retry, behind
	found := make([]bool, len(order))
	err := s.sendBatch(ctx, "acquire", &b, func(br pgx.BatchResults) error {
		for j := range order {
			dest := append([]any{&flags[j][0], &flags[j][1], &flags[j][2]}, rows[j].scanDest()...)
			err := br.QueryRow().Scan(dest...)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // the conflicting row is newer than our snapshot
			}
			if err != nil {
				return err
			}
			found[j] = true
		}
		return nil
	})
	for j, i := range order {
		r := &out[i]
		switch {
		case err != nil:
			r.Err = err
		case !found[j] || flags[j][1] || flags[j][2]: // Acquire reports a counter behind
			r.Lease, r.Record, r.Err = s.Acquire(ctx, reqs[i].Key, reqs[i].Fingerprint, leaseTTL)
		case flags[j][0]:
			r.Lease, r.Record, r.Err = rows[j].lease(reqs[i].Key)
		default:
			r.Record, r.Err = rows[j].record(reqs[i].Key)
		}
	}
	return out
}

// FinishBatch implements idem.BatchStore: the fenced statements of
// Complete, Fail and Release, one per write, sent in one pipeline that runs
// as one implicit transaction (one round trip, one commit), in key order. A
// write that matches no row is refused with idem.ErrLeaseLost; if a
// statement or the commit fails, none of the writes happened and each gets
// the error.
func (s *Store) FinishBatch(ctx context.Context, fs []idem.Finish, retention time.Duration) []error {
	if retention < 0 {
		return idem.FinishBatchFailed(len(fs), fmt.Errorf("pgstore: finish: negative retention %v", retention))
	}
	out := make([]error, len(fs))
	order := make([]int, 0, len(fs))
	for i, f := range fs {
		if f.Lease == nil {
			out[i] = fmt.Errorf("pgstore: %s: nil lease", f.Kind)
			continue
		}
		if _, ok := pgToken(f.Lease.Token); !ok {
			out[i] = leaseLost(f.Kind.String(), f.Lease)
			continue
		}
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(fs[a].Lease.Key, fs[b].Lease.Key) })
	var b pgx.Batch
	for _, i := range order {
		f := fs[i]
		tok, _ := pgToken(f.Lease.Token)
		switch f.Kind {
		case idem.FinishComplete:
			b.Queue(s.sql.finish, f.Lease.Key, tok, idem.StatusCompleted.String(), idem.EncodeResponse(&f.Response), retention)
		case idem.FinishFail:
			b.Queue(s.sql.finish, f.Lease.Key, tok, idem.StatusFailed.String(), idem.EncodeResponse(&f.Response), retention)
		default:
			b.Queue(s.sql.release, f.Lease.Key, tok)
		}
	}
	affected := make([]int64, len(order))
	err := s.sendBatch(ctx, "finish", &b, func(br pgx.BatchResults) error {
		for j := range order {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			affected[j] = tag.RowsAffected()
		}
		return nil
	})
	for j, i := range order {
		switch {
		case err != nil:
			out[i] = err
		case fs[i].Kind != idem.FinishComplete && fs[i].Kind != idem.FinishFail && fs[i].Kind != idem.FinishRelease:
			out[i] = fmt.Errorf("pgstore: finish batch: unknown finish kind %s", fs[i].Kind)
		case affected[j] == 0:
			out[i] = s.lostOrCorrupt(ctx, fs[i].Kind.String(), fs[i].Lease)
		}
	}
	return out
}

// sendBatch sends b on one pooled connection, lets read consume the
// results, and closes the batch, which ends its implicit transaction. Any
// error means the transaction did not commit; it is returned as a backend
// error, ambiguous when the connection may have failed after the commit.
func (s *Store) sendBatch(ctx context.Context, op string, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	if b.Len() == 0 {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return backendError(op, err, false)
	}
	defer conn.Release()
	br := conn.SendBatch(ctx, b)
	rerr := read(br)
	cerr := br.Close()
	if err := errors.Join(rerr, cerr); err != nil {
		return backendError(op+" batch", err, true)
	}
	return nil
}
