// Package servers starts, crashes and restarts, and stops private Redis and
// PostgreSQL servers on spare loopback ports, alone or replicated, for the
// harness's backend restart and failover faults (see the fault catalog in
// docs/design/verification.md) and for tests.
// It runs the binaries installed on the machine; it needs no Docker.
//
// # Redis
//
// StartRedis runs redis-server from PATH on 127.0.0.1 with --save "" and
// either no persistence (None) or an fsynced append-only file (AOFAlways,
// appendfsync always). Restart is a crash: SIGKILL, then a new process on the
// same port and directory. With None every key is gone after it; with
// AOFAlways every acknowledged write is still there.
//
// # PostgreSQL
//
// StartPostgres runs initdb (superuser "postgres", trust authentication) and
// postgres from PATH or /usr/lib/postgresql/*/bin, listening on 127.0.0.1
// with its unix socket inside its directory and fsync on, and creates
// database "test". Restart is an immediate shutdown (SIGQUIT, what
// `pg_ctl stop -m immediate` sends): no checkpoint, open transactions lost,
// crash recovery at the next start, every committed transaction kept.
//
// PostgreSQL refuses to run as root. When this process is root, initdb and
// postgres run as an unprivileged user (PostgresOptions.User, "postgres" by
// default) through SysProcAttr.Credential, and the server's directory is
// owned by that user. If the user does not exist the error wraps ErrNoUser;
// if it cannot enter the temporary directory's parent the error says so.
//
// # Replicated topologies and failover
//
// Three Topology values run replicated servers from the same binaries, each
// server a Redis or Postgres of this package on its own loopback port:
//
//   - StartRedisSentinel: a primary, one or two replicas and three
//     Sentinels (redis-server --sentinel, quorum 2, down-after 500ms);
//     redis.NewFailoverClient(t.FailoverOptions()) follows a failover.
//   - StartRedisCluster: three primaries with one replica each and a
//     one-second cluster-node-timeout; t.NewClient() follows a failover
//     (FollowClusterFailover: go-redis reloads its slot map when a dial
//     fails).
//   - StartPostgresReplicated: a primary and a streaming standby made with
//     pg_basebackup -R, asynchronous or synchronous (synchronous_commit on,
//     remote_write or remote_apply); pgx on t.URL(), a multi-host URL with
//     target_session_attrs=read-write, follows a failover.
//
// Failover(ctx, key) is the failover fault: SIGKILL of the primary (for a
// Cluster, the primary of key's slot; for PostgreSQL every process of the
// server, as a host failure), then the promotion (Sentinel elects, the
// Cluster replica takes over, pg_ctl promote), waited for. It returns the
// fault window as a history.Op (history.Fault of kind FaultFailover, on
// history.Now's timeline). Aim it by calling it right after the primary
// acknowledged a write: that is the window in which the write may exist on
// the primary only.
//
// On loopback a replica usually receives a write about when the client
// gets its reply, so whether an asynchronous replica misses it is a race.
// ReplicationLag routes a replica's link through an in-process proxy that
// holds every byte for that long and, when the primary's side of the link
// ends, drops what it still holds and resets the replica's side, as a dead
// host's unsent buffers are lost. With it, an asynchronous replica misses
// every write acknowledged within the lag before the primary died, and the
// settings that close the window (redisstore's WaitReplicas, a synchronous
// standby) can be shown to close it. A Cluster replica dials the address
// its primary announces on the cluster bus, so with ReplicationLag each
// primary announces ClusterLagIP (127.0.0.2, where its proxies listen) and
// sends clients to 127.0.0.1 by hostname; this needs all of 127.0.0.0/8 on
// the loopback interface, as Linux has it.
//
// # Cleanup guarantees
//
//   - Stop kills the server (Redis: SIGKILL; PostgreSQL: fast shutdown,
//     SIGKILL after 15 seconds), waits until every process of the server has
//     exited, so its port is free, and removes the directory if the package
//     created it. Stop is idempotent. "Every process of the server" is its
//     process group plus, on Linux, every process whose working directory
//     is inside the server's directory: PostgreSQL's backends leave the
//     postmaster's process group (each calls setsid) but work in its data
//     directory.
//   - StopAll stops every server and topology of this process that is still
//     running. A CLI calls it from its signal handler (SIGINT, SIGTERM). A
//     topology whose start is cut short by its context or by StopAll stops
//     what it had started and removes its directories; its lag proxies are
//     closed with it.
//   - Each server is the leader of its own process group. On Linux it also
//     has a parent-death signal (SIGKILL): if this process dies, even by
//     SIGKILL, the kernel kills the server, and PostgreSQL's backends exit
//     when their postmaster is gone.
//     The signal is tied to the OS thread that forked the server, so the
//     package forks from a fresh goroutine, never from one locked to a
//     thread that might exit.
//   - What a SIGKILLed parent cannot clean up, its temporary directory and a
//     killed postmaster's System V shared memory segment (56 bytes), is
//     removed by SweepStale, which StartRedis and StartPostgres call first:
//     it only touches this package's directories (named idembench-* in
//     os.TempDir(), with a marker file naming their creator) whose creating
//     process no longer runs, and waits (up to 5 seconds, then SIGKILL) for
//     the processes still working in them.
//   - A start that fails leaves no process and no temporary directory.
//
// Every wait is bounded: by the caller's context, or by 30 (Redis) or 60
// (PostgreSQL) seconds when the context has no deadline, and by 15 seconds
// for a signalled process to exit.
//
// The package builds on Unix only; the parent-death signal and the shared
// memory cleanup are Linux only.
package servers
