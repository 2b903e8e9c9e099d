package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// movedAttempts bounds how often a write with WaitReplicas is sent again
// after the node it went to answered MOVED (the slot moved, as after a
// Cluster failover): the answer proves the script did not run there.
const movedAttempts = 3

// checkWaitClient rejects WaitReplicas with a client whose commands cannot
// be pinned to the connection of the key's primary.
func checkWaitClient(client redis.UniversalClient, replicas int) error {
	if replicas == 0 {
		return nil
	}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
		return nil
	}
	return fmt.Errorf("redisstore: WaitReplicas needs a *redis.Client or *redis.ClusterClient, not %T", client)
}

// waitNeed is what a script's reply asks of WaitReplicas.
type waitNeed int

const (
	noWait    waitNeed = iota // nothing to acknowledge
	waitWrite                 // the script wrote: WAIT for its write
	// waitRead: the script read a finished record that the caller will
	// replay. Its completion may not be replicated yet (its writer's WAIT
	// can still be pending, and a failover would lose it), so the replay
	// must not be handed out before it is: the connection makes a write
	// that replicates after it, INCRBY 0 of the slot's fencing counter
	// (keys[1]; the value does not change), and WAITs for that.
	waitRead
)

// acquireWait is what an acquire reply needs: a written lease is waited
// for, and so is a finished record returned for a replay.
func acquireWait(cmd *redis.Cmd) waitNeed {
	res, err := cmd.Slice()
	if err != nil {
		return noWait
	}
	switch code, _ := replyInt(res, 0); code {
	case resultApplied:
		return waitWrite
	case resultRefused:
		if len(res) < 2 {
			return noWait // malformed: acquireReply reports it
		}
		if h, ok := res[1].([]any); ok {
			for i := 0; i+1 < len(h); i += 2 {
				if f, _ := h[i].(string); f == fieldStatus {
					v, _ := h[i+1].(string)
					if st, err := idem.ParseStatus(v); err == nil && st != idem.StatusInProgress {
						return waitRead
					}
				}
			}
		}
	}
	return noWait
}

// appliedInt is what a fenced script's reply needs: its write, if it
// wrote, is waited for.
func appliedInt(cmd *redis.Cmd) waitNeed {
	if n, err := cmd.Int64(); err == nil && n >= resultApplied {
		return waitWrite
	}
	return noWait
}

// runWrite runs a write script for keys (all in one hash slot). Without
// WaitReplicas it is script.Run on the store's client. With it, the script
// runs on one connection of the primary that owns keys[0], and, when need
// says the reply needs it (see waitNeed), WAIT follows on that connection:
// Redis counts only the replicas that acknowledged this connection's
// writes. The returned command carries the script's own reply or error;
// the error is non-nil only when a WAIT was needed and failed or counted
// too few replicas, and is then an ambiguous idem.BackendError.
func (s *Store) runWrite(ctx context.Context, op string, script *redis.Script, keys []string,
	need func(*redis.Cmd) waitNeed, args ...any) (*redis.Cmd, error) {
	if s.opts.WaitReplicas == 0 {
		return script.Run(ctx, s.client, keys, args...), nil
	}
	for attempt := 1; ; attempt++ {
		node, err := s.primaryFor(ctx, keys[0])
		if err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd, nil
		}
		cmd, werr := s.runAndWait(ctx, op, node, script, keys, need, args)
		if cc, ok := s.client.(*redis.ClusterClient); ok && redis.HasErrorPrefix(cmd.Err(), "MOVED") && attempt < movedAttempts {
			cc.ReloadState(ctx)
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
			continue
		}
		return cmd, werr
	}
}

// primaryFor returns the client of the node that owns key: the store's own
// *redis.Client, or the Cluster master of key's slot.
func (s *Store) primaryFor(ctx context.Context, key string) (*redis.Client, error) {
	switch c := s.client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	}
	return nil, errors.New("redisstore: WaitReplicas needs a *redis.Client or *redis.ClusterClient")
}

// runAndWait is one attempt of runWrite on node.
func (s *Store) runAndWait(ctx context.Context, op string, node *redis.Client, script *redis.Script, keys []string,
	need func(*redis.Cmd) waitNeed, args []any) (*redis.Cmd, error) {
	conn := node.Conn()
	defer conn.Close()
	cmd := script.Run(ctx, conn, keys, args...)
	if cmd.Err() != nil {
		return cmd, nil
	}
	switch need(cmd) {
	case noWait:
		return cmd, nil
	case waitRead:
		if err := conn.IncrBy(ctx, keys[1], 0).Err(); err != nil {
			return cmd, idem.MarkAmbiguous(idem.BackendError(op, fmt.Errorf("%w: the write WAIT counts: %w", ErrNotReplicated, err)))
		}
	}
	want := s.opts.WaitReplicas
	got, err := conn.Wait(ctx, want, s.opts.WaitTimeout).Result()
	if err != nil {
		return cmd, idem.MarkAmbiguous(idem.BackendError(op, fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)))
	}
	if got < int64(want) {
		return cmd, idem.MarkAmbiguous(idem.BackendError(op, fmt.Errorf("%w: %d of %d replicas acknowledged within %v",
			ErrNotReplicated, got, want, s.opts.WaitTimeout)))
	}
	return cmd, nil
}
