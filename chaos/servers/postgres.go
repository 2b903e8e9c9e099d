//go:build unix

package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresOptions configures StartPostgres. The zero value is a new cluster
// in a new temporary directory on a free port.
type PostgresOptions struct {
	// Dir holds the cluster (Dir/data), the unix socket and the logs. Empty
	// means a new temporary directory that Stop removes. A directory given
	// here is created if missing and kept; a cluster already in Dir/data is
	// reused instead of running initdb. When running as root, Dir is chowned
	// to User and its mode set to 0700.
	Dir string
	// Port is the TCP port on 127.0.0.1. Zero picks a free one (retrying on
	// another port if a different process takes it first).
	Port int
	// AlsoListen is an IP address the server listens on besides
	// 127.0.0.1 (a bridge's address, for clients in other network
	// namespaces); empty means loopback only. URL and Addr stay on
	// 127.0.0.1.
	AlsoListen string
	// BinDir is the directory holding initdb and postgres. Empty looks for
	// postgres in PATH (following symlinks to its real directory), then in
	// the highest-numbered /usr/lib/postgresql/*/bin.
	BinDir string
	// User is the operating-system user that runs initdb and postgres when
	// this process runs as root (PostgreSQL refuses to run as root). Empty
	// means "postgres". It is ignored when not running as root: then the
	// server runs as the current user.
	User string
}

// Superuser is the database superuser StartPostgres creates (initdb -U); it
// is the user in URL, independent of the operating-system user.
const Superuser = "postgres"

// Database is the database StartPostgres creates and URL names.
const Database = "test"

// pgStartTimeout bounds a start (initdb included) or restart whose context
// has no deadline.
const pgStartTimeout = 60 * time.Second

// Postgres is a private PostgreSQL cluster started by StartPostgres. Its
// methods are safe for concurrent use.
type Postgres struct {
	server
	binDir string
	cred   *syscall.Credential
	listen string // listen_addresses
}

// StartPostgres creates a cluster with initdb (superuser "postgres", trust
// authentication, UTF8, no locale) unless Dir already holds one, starts
// postgres on 127.0.0.1 with its unix socket in the directory and fsync on,
// waits until it accepts connections, and creates database "test" if it is
// missing.
//
// PostgreSQL refuses to run as root. When this process is root, initdb and
// postgres run as opts.User ("postgres" by default) through
// SysProcAttr.Credential, and the directory is chowned to that user; if the
// user does not exist the error wraps ErrNoUser, and if the temporary
// directory's parents are not searchable by it the error says so (set TMPDIR
// or Dir). pg_ctl is not needed: the server is the direct child of this
// process, in its own process group, and on Linux dies with this process.
//
// StartPostgres fails with an error wrapping ErrNotFound when the binaries
// are missing, and with the tail of the server's log when it exits during
// start-up. If ctx has no deadline, it gives up after 60 seconds. On error
// nothing is left running and a temporary directory is removed.
func StartPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	if err := checkPort(opts.Port); err != nil {
		return nil, err
	}
	binDir, err := findPostgres(opts.BinDir)
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential(opts.User)
	if err != nil {
		return nil, err
	}
	_ = SweepStale()
	pg := &Postgres{binDir: binDir, cred: cred, listen: "127.0.0.1"}
	if opts.AlsoListen != "" {
		if net.ParseIP(opts.AlsoListen) == nil {
			return nil, fmt.Errorf("servers: AlsoListen %q is not an IP address", opts.AlsoListen)
		}
		pg.listen += "," + opts.AlsoListen
	}
	if err := pg.useDir("postgres", opts.Dir, 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := withStartTimeout(ctx, pgStartTimeout)
	defer cancel()
	if err := pg.prepare(ctx); err != nil {
		_ = pg.removeTempDir()
		return nil, err
	}
	if err := pg.start(ctx, pg, opts.Port, pg.spawn); err != nil {
		return nil, err
	}
	return pg, nil
}

// findPostgres returns the directory holding initdb and postgres.
func findPostgres(binDir string) (string, error) {
	var candidates []string
	if binDir != "" {
		candidates = []string{binDir}
	} else {
		if p, err := exec.LookPath("postgres"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				candidates = append(candidates, filepath.Dir(real))
			}
		}
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		slices.SortFunc(dirs, func(a, b string) int { return pgMajor(b) - pgMajor(a) })
		candidates = append(candidates, dirs...)
	}
	for _, d := range candidates {
		if isExecutable(filepath.Join(d, "postgres")) && isExecutable(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	if binDir != "" {
		return "", fmt.Errorf("%w: no postgres and initdb in %s", ErrNotFound, binDir)
	}
	return "", fmt.Errorf("%w: postgres and initdb are neither in PATH nor in /usr/lib/postgresql/*/bin (install PostgreSQL or set PostgresOptions.BinDir)", ErrNotFound)
}

// pgMajor returns the version number in /usr/lib/postgresql/N/bin, or 0.
func pgMajor(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// postgresCredential returns the credential to run PostgreSQL with: nil when
// not root, else name's (default "postgres").
func postgresCredential(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: running as root, which PostgreSQL refuses, and user %q cannot be found (%v); create it or set PostgresOptions.User", ErrNoUser, name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("%w: user %q (uid %s) cannot run PostgreSQL", ErrNoUser, name, u.Uid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func (pg *Postgres) dataDir() string { return filepath.Join(pg.dir, "data") }

// prepare hands the directory to the server's user and runs initdb unless
// the data directory already holds a cluster.
func (pg *Postgres) prepare(ctx context.Context) error {
	if pg.cred != nil {
		if err := searchableBy(filepath.Dir(pg.dir), pg.cred); err != nil {
			return err
		}
		if err := os.Chown(pg.dir, int(pg.cred.Uid), int(pg.cred.Gid)); err != nil {
			return fmt.Errorf("servers: chown %s: %w", pg.dir, err)
		}
		if err := os.Chmod(pg.dir, 0o700); err != nil {
			return fmt.Errorf("servers: chmod %s: %w", pg.dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(pg.dataDir(), "PG_VERSION")); err == nil {
		return pg.trustSameNet()
	}
	args := []string{"-D", pg.dataDir(), "-U", Superuser, "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"}
	if err := runTool(ctx, filepath.Join(pg.binDir, "initdb"), args, pg.dir, "initdb.log", pg.cred); err != nil {
		return err
	}
	return pg.trustSameNet()
}

// sameNetRule lets clients of the server's own subnets in, as initdb's
// rules let in loopback's.
const sameNetRule = "host all all samenet trust\n"

// trustSameNet adds sameNetRule to pg_hba.conf when the server listens
// on an address besides loopback (AlsoListen), once.
func (pg *Postgres) trustSameNet() error {
	if pg.listen == "127.0.0.1" {
		return nil
	}
	path := filepath.Join(pg.dataDir(), "pg_hba.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	if strings.Contains(string(b), sameNetRule) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	_, err = f.WriteString(sameNetRule)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	return nil
}

// searchableBy fails unless every directory from dir up to / lets cred's
// user pass through (the others execute bit, or ownership by that user or
// group with the matching bit).
func searchableBy(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("servers: %w", err)
		}
		mode := st.Mode().Perm()
		sys, _ := st.Sys().(*syscall.Stat_t)
		ok := mode&0o001 != 0 ||
			sys != nil && sys.Uid == cred.Uid && mode&0o100 != 0 ||
			sys != nil && sys.Gid == cred.Gid && mode&0o010 != 0
		if !ok {
			return fmt.Errorf("servers: PostgreSQL runs as uid %d, which cannot enter %s (mode %v); set TMPDIR or PostgresOptions.Dir to a directory it can reach", cred.Uid, d, mode)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// spawn starts postgres on port and waits until it accepts connections and
// database "test" exists; on error the process is gone.
func (pg *Postgres) spawn(ctx context.Context, port int) (*proc, error) {
	args := []string{
		"-D", pg.dataDir(), "-p", strconv.Itoa(port), "-k", pg.dir,
		"-c", "listen_addresses=" + pg.listen,
		"-c", "fsync=on",
		"-c", "logging_collector=off",
		// Dynamic shared memory as files in the data directory, so that a
		// server killed with its parent leaves nothing in /dev/shm.
		"-c", "dynamic_shared_memory_type=mmap",
	}
	return pg.launch(ctx, "postgres", port, filepath.Join(pg.binDir, "postgres"), args, filepath.Join(pg.dir, "postgres.log"), pg.cred,
		func(ctx context.Context, _ *proc) error { return pg.ready(ctx, port) })
}

// ready connects to database postgres on port, checks that the server is the
// one running in this directory, and creates database "test" if missing.
func (pg *Postgres) ready(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL(port, "postgres")+"&connect_timeout=2")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var dataDir string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dataDir); err != nil {
		return err
	}
	if filepath.Clean(dataDir) != pg.dataDir() {
		return fmt.Errorf("port %d is answered by the cluster in %s, not %s", port, dataDir, pg.dataDir())
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{Database}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

func pgURL(port int, db string) string {
	return "postgres://" + Superuser + "@" + loopback(port) + "/" + db + "?sslmode=disable"
}

// URL returns postgres://postgres@127.0.0.1:PORT/test?sslmode=disable. It
// stays the same across restarts.
func (pg *Postgres) URL() string { return pgURL(pg.port, Database) }

// Dir returns the directory holding the cluster (Dir()/data), the socket and
// the logs (postgres.log, initdb.log).
func (pg *Postgres) Dir() string { return pg.dir }

// Restart crashes the server with an immediate shutdown, as
// `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster: no checkpoint,
// every backend ends at once), starts it again on the same port and waits
// until crash recovery is done and it accepts connections. Every committed
// transaction survives; open ones are lost. If the new process cannot start,
// Restart returns the error and the server stays down; Stop still cleans up.
// After Stop, Restart returns ErrStopped. If ctx has no deadline, waiting is
// bounded by 60 seconds.
func (pg *Postgres) Restart(ctx context.Context) error {
	return pg.restart(ctx, func(p *proc) error { return p.shutdown(syscall.SIGQUIT) }, pgStartTimeout, pg.spawn)
}

// Stop shuts the server down (a fast shutdown, SIGINT; SIGKILL to its
// process group if it has not exited within 15 seconds), waits until every
// process of the group is gone, and removes the directory if StartPostgres
// created it. Stop is idempotent: later calls return nil.
func (pg *Postgres) Stop() error {
	return pg.stop(pg, func(p *proc) error { return p.shutdown(syscall.SIGINT) })
}
