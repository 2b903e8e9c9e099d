package engines

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/harness"
)

// redisOpenError says why the Redis at url did not answer a PING: a
// server that answered and refused the URL's password, user or database
// is a configuration error (exit 2) that says what to change in the URL;
// anything else (nothing listens, a timeout) is an unreachable server, an
// environment error.
func redisOpenError(url string, err error) error {
	at := harness.RedactURL(url)
	switch {
	case redis.HasErrorPrefix(err, "WRONGPASS"):
		return harness.ConfigError("redis at %s refused the user name or password of the URL (%v): "+
			"put the right ones in the URL, redis://USER:PASSWORD@HOST:PORT/DB (or redis://:PASSWORD@… for the default user)", at, err)
	case redis.HasErrorPrefix(err, "NOAUTH"):
		return harness.ConfigError("redis at %s wants a password and the URL has none (%v): "+
			"put it in the URL, redis://:PASSWORD@HOST:PORT/DB", at, err)
	case redis.HasErrorPrefix(err, "DB index is out of range"): // HasErrorPrefix drops "ERR "
		return harness.ConfigError("redis at %s has no database of the number the URL ends with (%v): "+
			"a server has the databases of its 'databases' setting, 0 to 15 by default; end the URL with one of them, e.g. /0", at, err)
	}
	return fmt.Errorf("redis unreachable at %s: %w", at, err)
}

// PostgreSQL error codes of a connection the server refused.
const (
	pgInvalidPassword      = "28P01" // password authentication failed
	pgInvalidAuthorization = "28000" // no such role, or pg_hba.conf refuses it
	pgInvalidCatalogName   = "3D000" // no such database
)

// postgresOpenError is redisOpenError for PostgreSQL: a refused password,
// role or database is a configuration error that says what to change in
// the URL.
func postgresOpenError(url string, err error) error {
	at := harness.RedactURL(url)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgInvalidPassword:
			return harness.ConfigError("postgres at %s refused the password of the URL (%s): "+
				"put the right one in the URL, postgres://USER:PASSWORD@HOST:PORT/DB", at, pe.Message)
		case pgInvalidAuthorization:
			return harness.ConfigError("postgres at %s refused the user of the URL (%s): "+
				"name a role the server has (postgres://USER:PASSWORD@HOST:PORT/DB), or let pg_hba.conf admit it", at, pe.Message)
		case pgInvalidCatalogName:
			return harness.ConfigError("postgres at %s has no such database (%s): "+
				"create it (createdb NAME) or name one the server has at the end of the URL", at, pe.Message)
		}
	}
	return fmt.Errorf("postgres unreachable at %s: %w", at, err)
}
