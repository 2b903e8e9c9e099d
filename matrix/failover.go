package matrix

import (
	"context"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/harness"
)

// howFailover is the failover column's How on an asynchronous topology,
// howFailoverSync on a synchronous one (backendfault.Failover).
const (
	howFailover     = "SIGKILL of the primary right after a completion, replica promoted (200ms replication lag)"
	howFailoverSync = "SIGKILL of the primary right after an effect, replica promoted 3s later (200ms replication lag)"
)

// failover adds the failover cell of cfg on kind's backend; the variant is
// the kind.
func (l *cellList) failover(cfg Config, kind backendfault.FailoverKind) {
	how := howFailover
	if kind == backendfault.RedisWait || kind == backendfault.PostgresSync {
		how = howFailoverSync
	}
	l.add(Cell{Config: cfg, Backend: harness.Backend(kind.Backend()), Fault: Failover, Variant: string(kind),
		How: how, scenario: "duplicates", failover: kind})
}

// failoverColumn adds every failover cell: the fenced configurations on
// the four topologies, the transactional mode on the two PostgreSQL ones.
func (l *cellList) failoverColumn() {
	for _, cfg := range []Config{Plain, Fenced, Recovery} {
		for _, k := range backendfault.FailoverKinds {
			l.failover(cfg, k)
		}
	}
	l.failover(Tx, backendfault.PostgresAsync)
	l.failover(Tx, backendfault.PostgresSync)
}

// startFailover starts the fresh topology of a failover cell and returns
// its plan with a function that stops it (never nil).
func startFailover(ctx context.Context, c *Cell) (*backendfault.Plan, func(), error) {
	fo, stop, err := backendfault.StartFailover(ctx, c.failover)
	if err != nil {
		return nil, stop, err
	}
	return &backendfault.Plan{Failover: fo, ReplayArgs: []string{"--failover", string(c.failover)}}, stop, nil
}
