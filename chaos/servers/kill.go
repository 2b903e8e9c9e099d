//go:build unix

package servers

import (
	"fmt"
	"syscall"
)

// Kill crashes the server with SIGKILL, as a power cut or an OOM kill
// would, and waits until it has exited; it does not start it again. The
// port, directory and data stay: Restart starts the server again, Stop
// removes the directory. Kill of a server that is down or stopped does
// nothing.
func (r *Redis) Kill() error { return r.running((*proc).kill) }

// Kill crashes the cluster as a host failure would: SIGKILL to the
// postmaster's process group and at once to every process working in its
// data directory (the backends and the WAL sender, which otherwise run on
// until they notice their postmaster died), then waits until all of them
// have exited. The server is not started again: Restart does that (crash
// recovery), Stop removes the directory. Kill of a server that is down or
// stopped does nothing.
func (pg *Postgres) Kill() error {
	return pg.running(func(p *proc) error {
		if p.exited() {
			return nil
		}
		p.ended.Store(true)
		p.signalGroup(syscall.SIGKILL)
		for _, pid := range leftovers(p.pid(), pg.dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !p.waitExit(exitTimeout) {
			return fmt.Errorf("servers: postgres %d did not exit after SIGKILL", p.pid())
		}
		return p.waitGone(exitTimeout)
	})
}

// Health reports whether the server is as this package left it: nil while
// it runs, while Kill has it down, or after Stop. It returns an error
// wrapping ErrDown, naming the server, its process and what happened, when
// the process exited without Kill, Restart or Stop doing it (killed from
// outside, or crashed) or is stopped with SIGSTOP (Linux only: elsewhere a
// stopped server reads as running).
func (r *Redis) Health() error {
	return r.running(func(p *proc) error { return p.health("redis-server on " + r.Addr()) })
}

// Health is Redis.Health for the postmaster.
func (pg *Postgres) Health() error {
	return pg.running(func(p *proc) error { return p.health("postgres on " + pg.Addr()) })
}
