// Command ownbench is idembench with the MySQL/MariaDB store of package
// ownstore registered as engine "mysql" (DSN from IDEM_MYSQL_URL): every
// subcommand of idembench runs on it, e.g.
//
//	IDEM_MYSQL_URL='root@tcp(127.0.0.1:3306)/test' go run ./cmd/ownbench run --engine mysql
package main

import (
	"context"
	"io"
	"os"

	"github.com/idembench/idembench/cli"
	"github.com/idembench/idembench/examples/ownstore"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/idem"
)

func main() {
	mysql := harness.StoreFactory{Name: "mysql", Backends: []harness.Backend{harness.Memory}, Persistent: true,
		Open: func(ctx context.Context, _ harness.Env) (idem.Store, io.Closer, error) {
			st, err := ownstore.Open(ctx, os.Getenv("IDEM_MYSQL_URL"))
			return st, st, err
		}}
	os.Exit(cli.Main(os.Args[1:], append(engines.Builtin(), mysql)...))
}
