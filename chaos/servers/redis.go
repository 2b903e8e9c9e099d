//go:build unix

package servers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Persistence is how a Redis server keeps its data across a crash.
type Persistence int

const (
	// None keeps data in memory only (no RDB snapshots, no AOF): a restart
	// loses every key. A dump.rdb already present in a caller's Dir is still
	// loaded at start, as Redis always does.
	None Persistence = iota
	// AOFAlways appends every write to the AOF and fsyncs it before the
	// reply (appendfsync always): a crash loses no acknowledged write.
	AOFAlways
)

// String returns "none" or "aof-always".
func (p Persistence) String() string {
	switch p {
	case None:
		return "none"
	case AOFAlways:
		return "aof-always"
	}
	return "Persistence(" + strconv.Itoa(int(p)) + ")"
}

// RedisOptions configures StartRedis. The zero value is a server without
// persistence on a free port in a new temporary directory.
type RedisOptions struct {
	// Persistence is None (the zero value) or AOFAlways.
	Persistence Persistence
	// Dir is the server's working directory (AOF, log). Empty means a new
	// temporary directory that Stop removes; a directory given here is
	// created if missing and kept.
	Dir string
	// Port is the TCP port on 127.0.0.1. Zero picks a free one (retrying on
	// another port if a different process takes it first).
	Port int
	// AlsoListen is an IP address the server listens on besides
	// 127.0.0.1 (a bridge's address, for clients in other network
	// namespaces); empty means loopback only. URL and Addr stay on
	// 127.0.0.1.
	AlsoListen string
	// Binary is the redis-server executable. Empty looks it up in PATH.
	Binary string
}

// redisStartTimeout bounds a start or restart whose context has no deadline.
const redisStartTimeout = 30 * time.Second

// Redis is a private redis-server process started by StartRedis. Its
// methods are safe for concurrent use.
type Redis struct {
	server
	bin     string
	args    func(port int) ([]string, error)
	logPath string
}

// StartRedis starts redis-server on 127.0.0.1 with the given options and
// waits until it answers PING (its AOF loaded). The server runs with
// --save "" (never snapshots), --appendonly yes|no, --appendfsync always,
// --maxmemory-policy noeviction and --daemonize no, in its own process group,
// and on Linux dies with this process. Its log is redis.log in the
// directory.
//
// StartRedis fails with an error wrapping ErrNotFound when redis-server is
// missing, and with the tail of the server's log when it exits during
// start-up. If ctx has no deadline, it gives up after 30 seconds. On error
// nothing is left running and a temporary directory is removed.
func StartRedis(ctx context.Context, opts RedisOptions) (*Redis, error) {
	return startRedis(ctx, opts, redisRole{})
}

// redisRole turns a plain server into a replica, Sentinel or Cluster node:
// conf, when set, writes a configuration file into the server's directory
// and returns its path, which becomes the first argument (Sentinel needs
// one it can rewrite); args are appended to the package's own.
type redisRole struct {
	conf func(dir string, port int) (string, error)
	args []string
}

func startRedis(ctx context.Context, opts RedisOptions, role redisRole) (*Redis, error) {
	if opts.Persistence != None && opts.Persistence != AOFAlways {
		return nil, fmt.Errorf("servers: unknown redis persistence %d", opts.Persistence)
	}
	if err := checkPort(opts.Port); err != nil {
		return nil, err
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("%w: redis-server is not in PATH (install redis-server or set RedisOptions.Binary)", ErrNotFound)
		}
	}
	_ = SweepStale()
	r := &Redis{bin: bin}
	if err := r.useDir("redis", opts.Dir, 0o755); err != nil {
		return nil, err
	}
	r.logPath = filepath.Join(r.dir, "redis.log")
	// Loopback, and AlsoListen's clients, whom protected mode (no
	// password) would turn away.
	bind := []string{"--bind", "127.0.0.1"}
	if opts.AlsoListen != "" {
		if net.ParseIP(opts.AlsoListen) == nil {
			return nil, fmt.Errorf("servers: AlsoListen %q is not an IP address", opts.AlsoListen)
		}
		bind = append(bind, opts.AlsoListen, "--protected-mode", "no")
	}
	appendonly := "no"
	if opts.Persistence == AOFAlways {
		appendonly = "yes"
	}
	r.args = func(port int) ([]string, error) {
		var args []string
		if role.conf != nil {
			conf, err := role.conf(r.dir, port)
			if err != nil {
				return nil, err
			}
			args = append(args, conf)
		}
		args = append(args,
			"--port", strconv.Itoa(port),
			"--save", "", "--appendonly", appendonly, "--appendfsync", "always",
			"--dir", r.dir, "--maxmemory-policy", "noeviction", "--daemonize", "no",
			"--logfile", "",
		)
		args = append(args, bind...)
		return append(args, role.args...), nil
	}
	ctx, cancel := withStartTimeout(ctx, redisStartTimeout)
	defer cancel()
	if err := r.start(ctx, r, opts.Port, r.spawn); err != nil {
		return nil, err
	}
	return r, nil
}

// spawn starts the server on port and waits until it answers; on error the
// process is gone.
func (r *Redis) spawn(ctx context.Context, port int) (*proc, error) {
	args, err := r.args(port)
	if err != nil {
		return nil, err
	}
	return r.launch(ctx, "redis", port, r.bin, args, r.logPath, nil,
		func(ctx context.Context, p *proc) error { return redisReady(ctx, port, p.pid()) })
}

// redisReady asks the server on port for its process id (INFO server) and a
// PING. It fails unless the answer comes from pid and PING says PONG (not
// LOADING).
func redisReady(ctx context.Context, port, pid int) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", loopback(port))
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	info, err := readRESP(br)
	if err != nil {
		return err
	}
	if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
		return fmt.Errorf("port %d is answered by redis process %q, not %d", port, got, pid)
	}
	pong, err := readRESP(br)
	if err != nil {
		return err
	}
	if pong != "PONG" {
		return fmt.Errorf("PING answered %q", pong)
	}
	return nil
}

// errNilReply is readRESP's answer to a nil bulk string.
var errNilReply = errors.New("redis: nil reply")

// readRESP reads one simple-string, error, integer or bulk-string reply.
func readRESP(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty RESP line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case ':':
		return line[1:], nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if n == -1 && err == nil {
			return "", errNilReply
		}
		if err != nil || n < 0 || n > 1<<20 {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("unexpected RESP reply %q", line)
}

// infoField returns the value of name in an INFO reply, or "".
func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// URL returns redis://127.0.0.1:PORT/0. It stays the same across restarts.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Dir returns the server's working directory.
func (r *Redis) Dir() string { return r.dir }

// Restart crashes the server with SIGKILL, as a power cut or OOM kill would,
// then starts it again on the same port and directory and waits until it
// answers. With AOFAlways every acknowledged write survives; with None every
// key is gone. If the new process cannot start (for example because another
// process took the port in between), Restart returns the error and the
// server stays down; Stop still cleans up. After Stop, Restart returns
// ErrStopped. If ctx has no deadline, waiting is bounded by 30 seconds.
func (r *Redis) Restart(ctx context.Context) error {
	return r.restart(ctx, (*proc).kill, redisStartTimeout, r.spawn)
}

// Stop kills the server's process group with SIGKILL, waits until it has
// exited, and removes the directory if StartRedis created it. Stop is
// idempotent: later calls return nil.
func (r *Redis) Stop() error {
	return r.stop(r, (*proc).kill)
}
