package backendfault

import (
	"context"
	"fmt"

	"github.com/idembench/idembench/chaos/servers"
)

// StartServer starts the private server of a plan with restarts, for
// backend "redis" (with AOF appendfsync always when aofAlways, else no
// persistence) or "postgres", and returns it with the label of its
// restarts and a function that stops it. Another backend wraps ErrPlan.
func StartServer(ctx context.Context, backend string, aofAlways bool) (Server, string, func(), error) {
	switch backend {
	case "redis":
		p := servers.None
		if aofAlways {
			p = servers.AOFAlways
		}
		r, err := servers.StartRedis(ctx, servers.RedisOptions{Persistence: p})
		if err != nil {
			return nil, "", func() {}, err
		}
		return r, "restart redis (SIGKILL)", func() { _ = r.Stop() }, nil
	case "postgres":
		pg, err := servers.StartPostgres(ctx, servers.PostgresOptions{})
		if err != nil {
			return nil, "", func() {}, err
		}
		return pg, "restart postgres (immediate)", func() { _ = pg.Stop() }, nil
	}
	return nil, "", func() {}, fmt.Errorf("%w: backend restarts need backend redis or postgres, not %q", ErrPlan, backend)
}
