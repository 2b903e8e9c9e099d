// Package netproxy runs the network faults of backendfault plans on a
// chaos/netfault proxy (an embedded toxiproxy). Importing it registers
// Start with backendfault.RegisterProxy:
//
//	import _ "github.com/idembench/idembench/chaos/backendfault/netproxy"
//
// The idembench CLI and package matrix import it. Package harness does
// not: without it a plan with network faults is a configuration error
// (backendfault.ErrNoProxy), and a program that injects none does not link
// toxiproxy and its metrics, logging and HTTP packages.
package netproxy

import (
	"context"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/history"
)

func init() { backendfault.RegisterProxy(Start) }

var _ backendfault.Proxy = (*netfault.Proxy)(nil)

// Start starts a netfault proxy in front of upstream, recording its
// windows on history.Now; it is a backendfault.ProxyStarter.
func Start(ctx context.Context, upstream string, seed uint64) (backendfault.Proxy, error) {
	p, err := netfault.New(ctx, upstream, netfault.Options{Clock: history.Now, Seed: seed})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return p, nil
}
