package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/idem"
)

var _ idem.ConfigChecker = (*Store)(nil)

// CheckConfig verifies that every server the store writes to runs with
// maxmemory-policy noeviction, which the store's guarantees require (see the
// package doc). On a Cluster client it asks every master.
//
// It returns nil when the policy is noeviction everywhere, an error wrapping
// ErrEvictionPolicy and idem.ErrUnsafeConfig naming the policy and node
// otherwise, an error wrapping
// ErrConfigUnchecked when a server refuses CONFIG GET (disabled or denied by
// ACL, as on many managed services; the policy must then be checked another
// way), or an error wrapping idem.ErrBackend when a server cannot be reached.
func (s *Store) CheckConfig(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return checkNode(ctx, c, c.Options().Addr)
		})
	}
	return checkNode(ctx, s.client, "server")
}

// checkNode checks the eviction policy of the server c talks to; node names
// it in errors.
func checkNode(ctx context.Context, c redis.Cmdable, node string) error {
	cfg, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return fmt.Errorf("%w: %s: CONFIG GET maxmemory-policy: %v", ErrConfigUnchecked, node, err)
		}
		return storeError("check config", err, false)
	}
	policy, ok := cfg["maxmemory-policy"]
	if !ok {
		return fmt.Errorf("%w: %s: CONFIG GET returned no maxmemory-policy", ErrConfigUnchecked, node)
	}
	if policy != "noeviction" {
		return fmt.Errorf("%w (%w): %s runs with %q", ErrEvictionPolicy, idem.ErrUnsafeConfig, node, policy)
	}
	return nil
}
