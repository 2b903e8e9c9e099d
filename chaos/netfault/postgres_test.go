package netfault

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/internal/testenv"
)

// TestPostgresDropRepliesCommits: an INSERT whose reply is dropped times out
// on the client and is committed on the server.
func TestPostgresDropRepliesCommits(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgx.ParseConfig(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(context.Background())

	table := pgx.Identifier{uniqueName("netfault_test")}.Sanitize()
	if _, err := direct.Exec(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	defer direct.Exec(context.Background(), "DROP TABLE "+table)

	p := newProxy(t, cfg.Host+":"+strconv.Itoa(int(cfg.Port)), Options{})
	pcfg := cfg.Copy()
	pcfg.Host, pcfg.Fallbacks = "127.0.0.1", nil
	port, _ := strconv.Atoi(p.Addr()[len("127.0.0.1:"):])
	pcfg.Port = uint16(port)
	proxied, err := pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer proxied.Close(context.Background())

	if err := p.DropRepliesAfterApply(); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	// The simple protocol sends the statement in one message: the extended
	// protocol would wait for a (dropped) Describe reply before executing.
	_, err = proxied.Exec(qctx, "INSERT INTO "+table+" VALUES (1)", pgx.QueryExecModeSimpleProtocol)
	cancel()
	if !isTimeout(err) {
		t.Fatalf("INSERT with replies dropped = %v, want a time-out", err)
	}
	var n int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("rows committed = %d, want 1: the timed-out INSERT was committed", n)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	again, err := pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		t.Fatalf("connect through the proxy after Heal: %v", err)
	}
	defer again.Close(context.Background())
	if err := again.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 1 {
		t.Errorf("count through the proxy after Heal = %d, %v; want 1", n, err)
	}
}
