//go:build linux

package servers

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestPostgresRestartKeepsCommitted(t *testing.T) {
	needPostgres(t)
	ctx := testContext(t)
	pg, err := StartPostgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	if want := "postgres://postgres@" + pg.Addr() + "/test?sslmode=disable"; pg.URL() != want {
		t.Errorf("URL() = %q, want %q", pg.URL(), want)
	}
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE t (id int PRIMARY KEY)",
		"INSERT INTO t VALUES (1)",
		"BEGIN",
		"INSERT INTO t VALUES (2)", // never committed
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	checkRestart(ctx, t, pg)
	if _, err := conn.Exec(ctx, "COMMIT"); err == nil {
		t.Error("COMMIT on a connection that outlived an immediate shutdown succeeded")
	}
	conn.Close(ctx)

	conn, err = pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	rows, _ := conn.Query(ctx, "SELECT id FROM t ORDER BY id")
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != 1 {
		t.Errorf("rows after immediate restart = %v, want [1] (committed kept, open transaction lost)", ids)
	}

	checkStop(ctx, t, pg)
}

func TestStartPostgresErrors(t *testing.T) {
	ctx := testContext(t)
	if _, err := StartPostgres(ctx, PostgresOptions{BinDir: t.TempDir()}); !errors.Is(err, ErrNotFound) {
		t.Errorf("StartPostgres with an empty BinDir = %v, want ErrNotFound", err)
	}
	if os.Geteuid() == 0 {
		needPostgres(t)
		_, err := StartPostgres(ctx, PostgresOptions{User: "no-such-user-idembench"})
		if !errors.Is(err, ErrNoUser) {
			t.Errorf("StartPostgres as root with a missing user = %v, want ErrNoUser", err)
		}
		// t.TempDir's parent is private to root: the server's user cannot
		// reach it, and the error must say so instead of failing in initdb.
		private := filepath.Join(t.TempDir(), "pg")
		if err := os.Mkdir(private, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(private), 0o700); err != nil {
			t.Fatal(err)
		}
		if pg, err := StartPostgres(ctx, PostgresOptions{Dir: filepath.Join(private, "cluster")}); err == nil {
			pg.Stop()
			t.Error("StartPostgres in a directory its user cannot reach succeeded")
		} else {
			t.Logf("unreachable dir: %v", err)
		}
	}
}
