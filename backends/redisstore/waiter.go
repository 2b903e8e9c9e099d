package redisstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// Subscription modes for WaitChange, learnt on first use.
const (
	pubsubUnknown int32 = iota // not tried yet: try sharded first
	pubsubSharded              // SSUBSCRIBE (Redis 7+), matches SPUBLISH in the scripts
	pubsubClassic              // SUBSCRIBE; the scripts fell back to PUBLISH too
)

// WaitChange blocks until the in-progress record of key is completed,
// failed or released, its lease expires, or its token changes; then it
// returns nil and the caller should Acquire again. It returns nil at once
// when the key holds no in-progress record, and ctx.Err() when ctx ends
// first.
//
// It subscribes to the key's channel (SSUBSCRIBE on Redis 7, else
// SUBSCRIBE), then looks at the record and marks it as watched in one
// script; the scripts that finish or release a watched record publish on
// the channel. Since the subscription exists before the mark, a change
// after the look is not missed. It looks again every PollInterval, and at the
// lease expiry by the server clock, in case a message was lost; if the
// subscription fails, or Options.DisableNotify is set, polling is all it
// does. Each waiting call holds one pub/sub connection of its own. Spurious
// early returns are possible, as idem.Waiter allows.
func (s *Store) WaitChange(ctx context.Context, key string) error {
	if err := idem.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k := keysFor(s.opts.Prefix, key)
	var (
		msgs <-chan *redis.Message
		mark = "" // "1" once subscribed: ask the finishing script to publish
	)
	if !s.opts.DisableNotify {
		ps, err := s.subscribe(ctx, k.channel())
		if err == nil {
			defer ps.Close()
			msgs = ps.Channel()
			mark = "1"
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		// Otherwise pub/sub is unavailable: poll. A dead server shows up
		// in the probe below.
	}
	var seen string // token of the record being waited on
	for {
		status, tok, left, err := s.probe(ctx, k, mark)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if status != idem.StatusInProgress.String() || left <= 0 || (seen != "" && tok != seen) {
			return nil
		}
		seen = tok
		timer := time.NewTimer(min(s.opts.PollInterval, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-msgs:
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
}

// subscribe opens a subscription to ch and waits for the server to confirm
// it, trying sharded pub/sub first and remembering when the server lacks it.
func (s *Store) subscribe(ctx context.Context, ch string) (*redis.PubSub, error) {
	if s.pubsub.Load() != pubsubClassic {
		ps := s.client.SSubscribe(ctx, ch)
		_, err := ps.Receive(ctx)
		if err == nil {
			s.pubsub.Store(pubsubSharded)
			return ps, nil
		}
		_ = ps.Close()
		if !unknownCommand(err) {
			return nil, err
		}
		s.pubsub.Store(pubsubClassic)
	}
	ps := s.client.Subscribe(ctx, ch)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return ps, nil
}

// unknownCommand reports a server error saying the command does not exist.
func unknownCommand(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(strings.ToLower(rerr.Error()), "unknown command")
}

// probe reads the status and token of k's record and the time its lease has
// left by the server clock, in one round trip, and with mark "1" marks the
// record so that its completion is published. A record that is not in
// progress reports an empty status.
func (s *Store) probe(ctx context.Context, k keyset, mark string) (status, token string, left time.Duration, err error) {
	res, err := probeScript.Run(ctx, s.client, []string{k.record}, mark).Slice()
	if err != nil {
		return "", "", 0, storeError("wait", err, mark != "")
	}
	if len(res) != 3 {
		return "", "", 0, unexpected("wait", res)
	}
	status, ok1 := res[0].(string)
	token, ok2 := res[1].(string)
	ms, ok3 := res[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return "", "", 0, unexpected("wait", res)
	}
	return status, token, time.Duration(ms) * time.Millisecond, nil
}
