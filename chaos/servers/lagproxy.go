//go:build unix

package servers

import (
	"fmt"
	"time"

	"github.com/idembench/idembench/internal/netlag"
)

// lagProxy forwards TCP connections from its own loopback port to a target,
// holding every chunk of bytes for lag in each direction: a replication
// link with latency. When the target side of a connection ends (its server
// died), the bytes still held towards the client are dropped and the
// client's connection is reset, as a crashed host's unsent buffers are
// lost: a replica behind the proxy never receives what its primary wrote
// in the last lag before it died. It is a netlag proxy with
// DropOnServerDeath and a round trip of twice the lag.
type lagProxy = netlag.Proxy

// startLagProxy listens on a free loopback port and forwards to target.
func startLagProxy(target string, lag time.Duration) (*lagProxy, error) {
	return startLagProxyOn("", target, lag)
}

// startLagProxyOn listens on addr ("" is a free loopback port) and
// forwards to target. A lag of zero forwards every chunk at once.
func startLagProxyOn(addr, target string, lag time.Duration) (*lagProxy, error) {
	p, err := netlag.StartWith(target, 2*lag, netlag.Options{Listen: addr, DropOnServerDeath: true})
	if err != nil {
		return nil, fmt.Errorf("servers: lag proxy: %w", err)
	}
	return p, nil
}
