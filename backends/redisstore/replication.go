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

// acquired reports whether an acquire reply says the script wrote a lease.
func acquired(cmd *redis.Cmd) bool {
	res, err := cmd.Slice()
	if err != nil {
		return false
	}
	code, _ := replyInt(res, 0)
	return code == resultApplied
}

// appliedInt reports whether a fenced script's reply says it wrote.
func appliedInt(cmd *redis.Cmd) bool {
	n, err := cmd.Int64()
	return err == nil && n >= resultApplied
}

// runWrite runs a write script for keys (all in one hash slot). Without
// WaitReplicas it is script.Run on the store's client. With it, the script
// runs on one connection of the primary that owns keys[0], and, when wrote
// says the script changed something, WAIT follows on that connection: Redis
// counts only the replicas that acknowledged this connection's writes. The
// returned command carries the script's own reply or error; the error is
// non-nil only when the script wrote and the WAIT failed or counted too few
// replicas, and is then an ambiguous idem.BackendError.
func (s *Store) runWrite(ctx context.Context, op string, script *redis.Script, keys []string,
	wrote func(*redis.Cmd) bool, args ...any) (*redis.Cmd, error) {
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
		cmd, werr := s.runAndWait(ctx, op, node, script, keys, wrote, args)
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
	wrote func(*redis.Cmd) bool, args []any) (*redis.Cmd, error) {
	conn := node.Conn()
	defer conn.Close()
	cmd := script.Run(ctx, conn, keys, args...)
	if cmd.Err() != nil || !wrote(cmd) {
		return cmd, nil
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
